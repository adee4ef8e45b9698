// flowd-cvtree-synth: write synthetic bacterial proteomes evolved along a
// known random tree, and the tree (docs/tools.md, "flowd-cvtree-synth").
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include <boost/program_options.hpp>

#include "cvtree/generate.hpp"
#include "synth/cli.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace cvs = flowd::cvtree::synth;
namespace cli = flowd::synth::cli;

namespace {

constexpr cli::Tool tool{"flowd-cvtree-synth", {.usage = 2, .failed = 1}};

// OUT/proteomes and OUT/truth may be absent or empty folders, nothing else.
void check_free(const fs::path& out, const char* part) {
  std::error_code ec;
  const fs::path dir = out / part;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw po::error("--out: '" + dir.string() + "' exists and is not a folder");
  if (!fs::is_empty(dir, ec))
    throw po::error("--out: '" + dir.string() + "' is not empty; refusing to mix two data sets (choose another --out)");
}

}  // namespace

int main(int argc, char** argv) {
  cvs::Params p;
  std::string out;
  po::options_description opts(
      "usage: flowd-cvtree-synth --out DIR [options]\n"
      "Writes synthetic bacterial proteomes evolved along a random tree: DIR/proteomes/<name>.faa (P01,\n"
      "P02, ...) and the true tree, with branch lengths in expected substitutions per site, in\n"
      "DIR/truth/tree.nwk. DIR/proteomes and DIR/truth must not exist or be empty; they appear complete\n"
      "or not at all.\nOptions");
  opts.add_options()("help,h", "this help")("out", po::value(&out), "output folder (created)")(
      "proteomes", po::value(&p.proteomes)->default_value(p.proteomes), "proteomes (leaves of the tree)")(
      "proteins", po::value(&p.proteins)->default_value(p.proteins), "proteins of the root proteome")(
      "length", po::value(&p.mean_length)->default_value(p.mean_length), "mean protein length of the root, residues")(
      "divergence", po::value(&p.divergence)->default_value(p.divergence),
      "mean root-to-leaf path, expected substitutions per site")(
      "indel-rate", po::value(&p.indel_rate)->default_value(p.indel_rate),
      "insertions and deletions per site per expected substitution")(
      "gain-rate", po::value(&p.gain_rate)->default_value(p.gain_rate),
      "genes gained per gene per expected substitution per site")(
      "loss-rate", po::value(&p.loss_rate)->default_value(p.loss_rate),
      "genes lost per gene per expected substitution per site")(
      "rate-shape", po::value(&p.rate_shape)->default_value(p.rate_shape),
      "gamma shape of the rates across sites (smaller: more unequal)")(
      "drift", po::value(&p.drift)->default_value(p.drift),
      "composition drift along the tree (GC-like axis; 0: none)")(
      "min-internal", po::value(&p.min_internal)->default_value(p.min_internal),
      "shortest internal branch, a share of the divergence (0: as the random tree came; harder)")(
      "seed", po::value(&p.seed)->default_value(p.seed), "data-set seed");
  fs::path target;
  if (const auto done = tool.parse(argc, argv, opts, [&](const po::variables_map&) {
        cli::require_out(out);
        cvs::validate(p);
        target = fs::absolute(fs::path(out)).lexically_normal();
        if (target.filename().empty()) target = target.parent_path();
        std::error_code ec;
        if (fs::exists(target, ec) && !fs::is_directory(target, ec))
          throw po::error("--out: '" + out + "' exists and is not a folder");
        check_free(target, "proteomes");
        check_free(target, "truth");
      }))
    return *done;

  cli::watch_interruptions();
  return tool.write([&] {
    const auto start = std::chrono::steady_clock::now();
    std::error_code ec;
    fs::create_directories(target, ec);
    if (ec) throw cli::Failure("cannot create '" + target.string() + "': " + ec.message());
    // Written into a hidden folder in OUT and moved in at the end, so
    // OUT/proteomes and OUT/truth appear complete or not at all.
    cli::Staging staging(target / cli::partial_name("cvtree-synth"), {"proteomes", "truth"});
    std::size_t bytes = 0;
    const std::string newick = cvs::generate(p, [&](cvs::Proteome leaf) {
      cli::throw_if_interrupted();
      cli::write_file(staging.dir() / "proteomes" / (leaf.name + ".faa"), leaf.fasta);
      bytes += leaf.fasta.size();
    });
    cli::throw_if_interrupted();
    cli::write_file(staging.dir() / "truth" / "tree.nwk", newick + "\n");
    // The truth first, so proteomes never appear without it.
    staging.move_parts_to(target, {"truth", "proteomes"});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "flowd-cvtree-synth: %d proteomes (%.1f MB of FASTA) and their tree in %s (%.1f s)\n",
                 p.proteomes, static_cast<double>(bytes) / 1e6, target.c_str(), seconds);
  });
}
