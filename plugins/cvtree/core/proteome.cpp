#include "proteome.hpp"

#include <zlib.h>

#include <array>
#include <cctype>
#include <memory>
#include <stdexcept>

namespace flowd::cvtree {

namespace {

// CVTree's mapping of the 26 letters onto the 20 amino acids.
constexpr std::array<std::uint8_t, 26> letter_codes = [] {
  std::array<std::uint8_t, 26> t{};
  for (auto& c : t) c = 0;  // any other letter -> A
  for (std::size_t i = 0; i < amino_acids.size(); ++i)
    t[static_cast<std::size_t>(amino_acids[i] - 'A')] = static_cast<std::uint8_t>(i);
  auto code_of = [](char a) { return static_cast<std::uint8_t>(amino_acids.find(a)); };
  t['B' - 'A'] = code_of('D');
  t['Z' - 'A'] = code_of('E');
  t['U' - 'A'] = code_of('C');
  t['X' - 'A'] = code_of('G');
  return t;
}();

std::string printable(char c) {
  if (std::isprint(static_cast<unsigned char>(c))) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
  return buf;
}

}  // namespace

std::uint8_t residue_code(char letter) noexcept {
  const int up = std::toupper(static_cast<unsigned char>(letter));
  return letter_codes[static_cast<std::size_t>(up - 'A')];
}

Proteome parse_fasta(std::string_view text, const std::string& what) {
  Proteome p;
  p.residues.reserve(text.size());
  std::size_t line_no = 0;
  std::size_t pos = 0;
  // '*' or '-' seen at the end of the current protein so far: dropped if
  // nothing but more of them or the next header follows.
  std::size_t trailer_line = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && line.front() == '>') {
      p.starts.push_back(p.residues.size());
      trailer_line = 0;
      continue;
    }
    for (const char c : line) {
      if (c == ' ' || c == '\t') continue;
      if (p.starts.empty())
        throw std::invalid_argument(what + " line " + std::to_string(line_no) +
                                    ": sequence before the first header line ('>')");
      if (c == '*' || c == '-') {
        trailer_line = line_no;
        continue;
      }
      if (trailer_line > 0)
        throw std::invalid_argument(what + " line " + std::to_string(trailer_line) +
                                    ": '*' or '-' inside a protein (only a trailing one is dropped)");
      if (!std::isalpha(static_cast<unsigned char>(c)))
        throw std::invalid_argument(what + " line " + std::to_string(line_no) + ": " + printable(c) +
                                    " is not a residue");
      p.residues.push_back(residue_code(c));
    }
  }
  if (p.residues.empty())
    throw std::invalid_argument(what + ": no residues (" +
                                std::string(p.starts.empty() ? "an empty file" : "headers only") + ")");
  p.starts.push_back(p.residues.size());
  p.ends_with_newline = text.empty() || text.back() == '\n';
  return p;
}

std::string cut_short_warning(const Proteome& p, const std::string& what) {
  if (p.ends_with_newline) return {};
  return what + ": the last line has no line break: if the file was cut short (a failed copy), its last protein is "
                "incomplete and the proteome short; a gzipped file (.faa.gz) is checked in full";
}

Proteome read_proteome(const std::filesystem::path& file) {
  const std::string what = "'" + file.string() + "'";
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(file.c_str(), "rb"), gzclose);
  if (!f) throw std::invalid_argument(what + ": cannot open");
  gzbuffer(f.get(), 1 << 17);
  std::string text;
  std::array<char, 1 << 16> buf{};
  for (;;) {
    const int got = gzread(f.get(), buf.data(), static_cast<unsigned>(buf.size()));
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(f.get(), &err);
      throw std::invalid_argument(what + ": cannot read (" + std::string(msg ? msg : "zlib error") + ")");
    }
    if (got == 0) break;
    text.append(buf.data(), static_cast<std::size_t>(got));
  }
  // gzread hands over what it could decompress and reports the end of a
  // cut-off stream only here (Z_BUF_ERROR): without this check a proteome
  // truncated in transfer would be read as a short one.
  int err = Z_OK;
  const char* msg = gzerror(f.get(), &err);
  if (err == Z_BUF_ERROR)
    throw std::invalid_argument(what + ": truncated gzip file (the compressed stream ends early, after " +
                                std::to_string(text.size()) + " bytes of sequence)");
  if (err != Z_OK)
    throw std::invalid_argument(what + ": cannot read (" + std::string(msg ? msg : "zlib error") + ")");
  return parse_fasta(text, what);
}

}  // namespace flowd::cvtree
