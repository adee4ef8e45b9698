#pragma once
// Reading a proteome as CVTree reads it (docs/plugins/cvtree.md): FASTA,
// plain or gzipped; every header line ('>') starts a new protein; letters are
// upper-cased and mapped onto the 20 amino acids (B→D, Z→E, U→C, X→G, any
// other letter→A), so that k-mer counts equal CVTree's; a trailing '*' or
// '-' (a stop or gap at the end of a protein) is dropped. Any other
// character inside a sequence is an error naming the file and line: it would
// otherwise silently join or split k-mers.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace flowd::cvtree {

// The amino acids in code order: a residue's code is its index here.
inline constexpr std::string_view amino_acids = "ACDEFGHIKLMNPQRSTVWY";
inline constexpr int alphabet = 20;

// The code of an upper- or lower-case letter after CVTree's mapping.
std::uint8_t residue_code(char letter) noexcept;

// The proteins of a proteome, each a run of residue codes (0..19).
struct Proteome {
  std::vector<std::uint8_t> residues;  // all proteins, one after the other
  std::vector<std::size_t> starts;     // protein p is [starts[p], starts[p + 1]); starts.back() == residues.size()
  // False when the text's last line has no line break: nothing in plain
  // FASTA marks its end, so this is the one sign of a file cut short (a
  // gzipped one is checked in full: read_proteome).
  bool ends_with_newline = true;
  std::size_t proteins() const noexcept { return starts.empty() ? 0 : starts.size() - 1; }
};

// The warning for a proteome whose last line has no line break; empty when
// it has one. `what` names the file.
std::string cut_short_warning(const Proteome& p, const std::string& what);

// Parses FASTA text; `what` names the source in errors (std::invalid_argument:
// "'x.faa' line 12: '3' is not a residue"). A proteome with no residues (an
// empty or header-only file) is an error.
Proteome parse_fasta(std::string_view text, const std::string& what);

// Reads a file (gzipped or not: zlib reads both) and parses it. Throws
// std::invalid_argument naming the file when it cannot be read.
Proteome read_proteome(const std::filesystem::path& file);

}  // namespace flowd::cvtree
