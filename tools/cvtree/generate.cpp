#include "cvtree/generate.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "synth/counter_stream.hpp"

namespace flowd::cvtree::synth {

namespace {

// ---------------------------------------------------------------------------
// Residues

constexpr int n_amino = 20;

// The amino acids, in the order of the tables below.
constexpr std::array<char, n_amino> amino = {'A', 'R', 'N', 'D', 'C', 'Q', 'E', 'G', 'H', 'I',
                                             'L', 'K', 'M', 'F', 'P', 'S', 'T', 'W', 'Y', 'V'};

// Background composition, percent: UniProtKB/Swiss-Prot release statistics
// (they sum to 99.89; normalised where used).
constexpr std::array<double, n_amino> swissprot = {8.25, 5.53, 4.06, 5.45, 1.37, 3.93, 6.75, 7.07, 2.27, 5.96,
                                                   9.66, 5.84, 2.42, 3.86, 4.70, 6.56, 5.34, 1.08, 2.92, 6.87};

// The main axis along which bacterial proteomes differ in composition is
// their genome's GC content: GC-rich genomes use more of the amino acids
// with GC-rich codons (G, A, R, P) and fewer of those with AT-rich codons
// (F, Y, M, I, N, K) (Singer and Hickey 2000; Knight et al. 2001).
constexpr std::array<double, n_amino> gc_axis = {+1, +1, -1, 0, 0, 0, 0, +1, 0, -1,
                                                 0,  -1, -1, -1, +1, 0, 0, 0, 0, 0};

// Groups of similar residues: aliphatic (I, L, V, M), aromatic (F, W, Y),
// basic (K, R, H), acidic (D, E), amides (N, Q), hydroxyl (S, T), small (A,
// G), C, P. Substitution matrices (PAM, BLOSUM) show replacements mostly stay
// within such groups; `conservative` of the events do here.
constexpr int n_groups = 9;
constexpr int max_group = 4;
constexpr std::array<int, n_amino> group_of = {6, 2, 4, 3, 7, 4, 3, 6, 2, 0, 0, 2, 0, 1, 8, 5, 5, 1, 1, 0};

constexpr std::array<std::int8_t, 256> make_index() {
  std::array<std::int8_t, 256> t{};
  t.fill(-1);
  for (int i = 0; i < n_amino; ++i)
    t[static_cast<unsigned char>(amino[static_cast<std::size_t>(i)])] = static_cast<std::int8_t>(i);
  return t;
}
constexpr std::array<std::int8_t, 256> residue_index = make_index();

// ---------------------------------------------------------------------------
// The model's fixed choices (docs/tools.md lists them).

constexpr int min_length = 30;             // shortest root protein
constexpr double length_sigma = 0.7;       // log-normal spread of lengths: median 0.8 x the mean, as in E. coli
constexpr double gene_rate_sigma = 0.5;    // log-normal spread of the genes' rates (mean 1)
constexpr double conservative = 0.5;       // share of substitution events that stay within a residue group
constexpr double indel_mean = 3.0;         // mean indel length (geometric) ...
constexpr int indel_max = 40;              // ... capped
constexpr double tandem_insertion = 0.5;   // insertions that copy the residues just before (slippage)
constexpr std::size_t pseudogene = 10;     // a protein that deletions cut below this many residues is lost
constexpr double family_founder = 0.04;    // root proteins that found a paralogous family ...
constexpr double family_more = 3.0;        // ... with geometric (mean 3, at least 1) further members ...
constexpr double family_min_d = 0.3;       // ... each diverged from the founder by this ...
constexpr double family_max_d = 1.5;       // ... to this many substitutions per site
constexpr double domain_share = 0.08;      // root proteins carrying a diverged segment of another
constexpr double lcr_share = 0.04;         // root proteins with a low-complexity stretch
constexpr double duplication_share = 0.5;  // gained genes that copy one of the lineage (others: from outside)
constexpr double relaxed_divergence = 0.2; // at most this much extra divergence of a fresh duplicate
constexpr double foreign_gc_sd = 0.4;      // spread of the composition axis of genes from outside
constexpr double clock_sigma = 0.25;       // log-normal spread of the branches' rates
constexpr double min_wait = 0.2;           // Yule waiting times: at least this share of their mean

// ---------------------------------------------------------------------------
// Random numbers

// The generators' counter-based stream (tools/common/synth), keyed by the
// seed and a purpose: the tree, the root and each branch draw from streams
// of their own, so none of them shifts another's draws.
class Stream : public ::flowd::synth::CounterStream {
public:
  Stream(std::uint64_t seed, std::uint64_t purpose, std::uint64_t a = 0)
      : CounterStream(mix(mix(mix(seed) ^ purpose) ^ (a + 0x5bd1e995))) {}

  std::size_t below(std::size_t n) { return static_cast<std::size_t>(bits() % n); }  // [0, n), n > 0
  double exponential() { return -std::log(1.0 - uniform()); }
  double lognormal_mean1(double sigma) { return std::exp(sigma * normal() - 0.5 * sigma * sigma); }
  // Gamma(shape, 1): Marsaglia and Tsang (2000); below shape 1 through
  // Gamma(shape + 1) * U^(1/shape).
  double gamma(double shape) {
    if (shape < 1.0) return gamma(shape + 1.0) * std::pow(1.0 - uniform(), 1.0 / shape);
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x = 0.0, v = 0.0;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = 1.0 - uniform();
      if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
      if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
    }
  }
  // 1, 2, 3, ... with P(k) proportional to q^k and mean `mean`: by inversion.
  int geometric(double mean) {
    if (mean <= 1.0) return 1;
    return 1 + static_cast<int>(std::floor(std::log(1.0 - uniform()) / std::log(1.0 - 1.0 / mean)));
  }
};

enum Purpose : std::uint64_t {
  tree_shape = 1,
  root_proteome,
  branch,
};

// ---------------------------------------------------------------------------
// Composition

// A lineage's residue composition: the background tilted along the GC-like
// axis by `gc`, and what drawing and replacing residues under it needs.
class Composition {
public:
  explicit Composition(double gc) {
    std::array<double, n_amino> pi{};
    double sum = 0.0;
    for (int i = 0; i < n_amino; ++i) sum += pi[at(i)] = swissprot[at(i)] * std::exp(gc * gc_axis[at(i)]);
    double acc = 0.0;
    for (int i = 0; i < n_amino; ++i) {
      pi[at(i)] /= sum;
      cdf_[at(i)] = acc += pi[at(i)];
    }
    cdf_.back() = 1.0;
    std::array<double, n_groups> weight{};
    for (int i = 0; i < n_amino; ++i) {
      const std::size_t g = at(group_of[at(i)]);
      members_[g][at(size_[g])] = amino[at(i)];
      weight[g] += pi[at(i)];
      group_cdf_[g][at(size_[g]++)] = weight[g];
    }
    for (std::size_t g = 0; g < n_groups; ++g) {
      for (int m = 0; m < size_[g]; ++m) group_cdf_[g][at(m)] /= weight[g];
      group_cdf_[g][at(size_[g] - 1)] = 1.0;
    }
    // An event redraws the residue and may draw the same one again; the
    // share that changes it sets how many events make one substitution.
    double change = 0.0;
    for (int i = 0; i < n_amino; ++i) {
      const double p = pi[at(i)];
      change += p * (conservative * (1.0 - p / weight[at(group_of[at(i)])]) + (1.0 - conservative) * (1.0 - p));
    }
    events_per_substitution_ = 1.0 / change;
  }

  double events_per_substitution() const { return events_per_substitution_; }

  char draw(Stream& s) const {
    const double u = s.uniform();
    int i = 0;
    while (u >= cdf_[at(i)]) ++i;
    return amino[at(i)];
  }

  // One substitution event at a site holding `r`: a redraw within its group
  // or from the whole composition. Both keep the composition stationary.
  char replace(char r, Stream& s) const {
    const int index = residue_index[static_cast<unsigned char>(r)];
    if (index < 0 || s.uniform() >= conservative) return draw(s);
    const std::size_t g = at(group_of[at(index)]);
    const double u = s.uniform();
    int m = 0;
    while (u >= group_cdf_[g][at(m)]) ++m;
    return members_[g][at(m)];
  }

private:
  static constexpr std::size_t at(int i) { return static_cast<std::size_t>(i); }

  std::array<double, n_amino> cdf_{};
  std::array<std::array<char, max_group>, n_groups> members_{};
  std::array<std::array<double, max_group>, n_groups> group_cdf_{};
  std::array<int, n_groups> size_{};
  double events_per_substitution_ = 1.0;
};

// ---------------------------------------------------------------------------
// Genes and their evolution

struct Gene {
  std::string seq;          // seq[0] is the start methionine
  std::vector<float> rate;  // each site's relative rate, its gene's included; 0 at the start
  float gene_rate = 1.0f;   // for sites inserted later
};
using Genome = std::vector<Gene>;

float site_rate(const Gene& g, double shape, Stream& s) {
  return static_cast<float>(g.gene_rate * s.gamma(shape) / shape);
}

int draw_length(const Params& p, Stream& s) {
  return min_length + static_cast<int>(std::lround((p.mean_length - min_length) * s.lognormal_mean1(length_sigma)));
}

Gene random_gene(int length, const Composition& c, double shape, Stream& s) {
  Gene g;
  g.gene_rate = static_cast<float>(s.lognormal_mean1(gene_rate_sigma));
  g.seq.resize(static_cast<std::size_t>(length));
  g.rate.resize(g.seq.size());
  g.seq[0] = 'M';  // the start codon's residue, never substituted
  g.rate[0] = 0.0f;
  for (std::size_t i = 1; i < g.seq.size(); ++i) {
    g.seq[i] = c.draw(s);
    g.rate[i] = site_rate(g, shape, s);
  }
  return g;
}

// Insert `seq` with its rates into g before position `pos`.
void splice(Gene& g, std::size_t pos, const std::string& seq, const std::vector<float>& rate) {
  g.seq.insert(pos, seq);
  g.rate.insert(g.rate.begin() + static_cast<std::ptrdiff_t>(pos), rate.begin(), rate.end());
}

// Each site gets Poisson(events_per_substitution * rate * t) events. One
// uniform per site: it says "none" for most sites and, by inversion of the
// Poisson distribution, how many otherwise.
void substitute(Gene& g, double t, const Composition& c, Stream& s) {
  // After this many events on average a site has forgotten its residue
  // (every other event redraws from the whole composition): it is a fresh
  // draw, however many more there are.
  constexpr double saturated = 30.0;
  const double scale = c.events_per_substitution() * t;
  for (std::size_t i = 0; i < g.seq.size(); ++i) {
    const double mean = scale * g.rate[i];
    if (mean <= 0.0) continue;
    if (mean > saturated) {
      g.seq[i] = c.draw(s);
      continue;
    }
    double p = std::exp(-mean), cum = p;
    const double u = s.uniform();
    if (u < cum) continue;
    int events = 0;
    while (u >= cum && p > 0.0) {
      ++events;
      p *= mean / events;
      cum += p;
    }
    for (; events > 0; --events) g.seq[i] = c.replace(g.seq[i], s);
  }
}

// Poisson(indel_rate * gene rate * t * length) insertions and deletions, half
// each, of geometric length; never at the start residue.
void indels(Gene& g, double t, const Composition& c, const Params& p, Stream& s) {
  const int events = s.poisson(p.indel_rate * g.gene_rate * t * static_cast<double>(g.seq.size()));
  for (int e = 0; e < events; ++e) {
    const std::size_t length = static_cast<std::size_t>(std::min(indel_max, s.geometric(indel_mean)));
    const std::size_t size = g.seq.size();
    if (s.uniform() < 0.5) {
      if (size < 2) continue;
      const std::size_t pos = 1 + s.below(size - 1);
      const std::size_t n = std::min(length, size - pos);
      g.seq.erase(pos, n);
      g.rate.erase(g.rate.begin() + static_cast<std::ptrdiff_t>(pos),
                   g.rate.begin() + static_cast<std::ptrdiff_t>(pos + n));
      continue;
    }
    const std::size_t pos = 1 + s.below(size);  // before pos; pos == size appends
    if (s.uniform() < tandem_insertion && pos > 1) {
      // Replication slippage: the residues just before, again.
      const std::size_t from = pos > length ? std::max<std::size_t>(1, pos - length) : 1;
      const std::string seq = g.seq.substr(from, pos - from);
      const std::vector<float> rate(g.rate.begin() + static_cast<std::ptrdiff_t>(from),
                                    g.rate.begin() + static_cast<std::ptrdiff_t>(pos));
      splice(g, pos, seq, rate);
    } else {
      std::string seq(length, ' ');
      std::vector<float> rate(length);
      for (std::size_t i = 0; i < length; ++i) {
        seq[i] = c.draw(s);
        rate[i] = site_rate(g, p.rate_shape, s);
      }
      splice(g, pos, seq, rate);
    }
  }
}

void evolve(Gene& g, double t, const Composition& c, const Params& p, Stream& s) {
  substitute(g, t, c, s);
  indels(g, t, c, p, s);
}

// A stretch of 10-40 residues of low complexity, inserted at random: a
// homopolymer (residues that form them in bacterial proteins), a short
// tandem repeat of a 2-6 residue motif, or a mix of 2-3 residues.
void add_low_complexity(Gene& g, const Composition& c, const Params& p, Stream& s) {
  static constexpr std::array<char, 8> homopolymer = {'A', 'P', 'S', 'G', 'E', 'K', 'Q', 'T'};
  const std::size_t length = 10 + s.below(31);
  std::string seq(length, ' ');
  const double kind = s.uniform();
  if (kind < 1.0 / 3.0) {
    seq.assign(length, homopolymer[s.below(homopolymer.size())]);
  } else {
    std::string motif(kind < 2.0 / 3.0 ? 2 + s.below(5) : 2 + s.below(2), ' ');
    for (char& r : motif) r = c.draw(s);
    for (std::size_t i = 0; i < length; ++i)
      seq[i] = kind < 2.0 / 3.0 ? motif[i % motif.size()] : motif[s.below(motif.size())];
  }
  std::vector<float> rate(length);
  for (float& r : rate) r = site_rate(g, p.rate_shape, s);
  splice(g, 1 + s.below(g.seq.size()), seq, rate);
}

// A diverged copy of a 40-150 residue segment of `donor` (a shared domain)
// inserted into g.
void add_domain(Gene& g, const Gene& donor, const Composition& c, const Params& p, Stream& s) {
  if (donor.seq.size() < 2) return;
  const std::size_t length = std::min(donor.seq.size() - 1, 40 + s.below(111));
  const std::size_t from = 1 + s.below(donor.seq.size() - length);
  Gene piece;
  piece.gene_rate = donor.gene_rate;
  piece.seq = donor.seq.substr(from, length);
  piece.rate.assign(donor.rate.begin() + static_cast<std::ptrdiff_t>(from),
                    donor.rate.begin() + static_cast<std::ptrdiff_t>(from + length));
  evolve(piece, s.uniform(0.5, 1.5), c, p, s);
  splice(g, 1 + s.below(g.seq.size()), piece.seq, piece.rate);
}

Genome root(const Params& p) {
  Stream s(p.seed, root_proteome);
  const Composition c(0.0);
  const auto n = static_cast<std::size_t>(p.proteins);
  Genome genome;
  genome.reserve(n);
  while (genome.size() < n) {
    Gene founder = random_gene(draw_length(p, s), c, p.rate_shape, s);
    if (s.uniform() < domain_share && !genome.empty()) add_domain(founder, genome[s.below(genome.size())], c, p, s);
    if (s.uniform() < lcr_share) add_low_complexity(founder, c, p, s);
    const int more = s.uniform() < family_founder ? s.geometric(family_more) : 0;
    genome.push_back(founder);
    for (int m = 0; m < more && genome.size() < n; ++m) {
      Gene copy = founder;
      evolve(copy, s.uniform(family_min_d, family_max_d), c, p, s);
      genome.push_back(std::move(copy));
    }
  }
  // Families scattered over the genome, as old duplicates are.
  for (std::size_t i = genome.size(); i > 1; --i) std::swap(genome[i - 1], genome[s.below(i)]);
  return genome;
}

// ---------------------------------------------------------------------------
// The tree

struct Node {
  int parent = -1;
  std::array<int, 2> child{-1, -1};
  double length = 0.0;  // of the branch above, expected substitutions per site
  double gc = 0.0;      // the lineage's composition axis at the node
  int leaves = 1;       // in the subtree
  std::string name;     // leaves only
};

// nodes[0] is the root; a node comes after its parent.
std::vector<Node> random_tree(const Params& p) {
  Stream s(p.seed, tree_shape);
  std::vector<Node> nodes(1);
  std::vector<double> birth{0.0};
  std::vector<int> open;  // lineages not split yet
  auto split = [&](int node, double time) {
    for (int c = 0; c < 2; ++c) {
      Node child;
      child.parent = node;
      nodes[static_cast<std::size_t>(node)].child[static_cast<std::size_t>(c)] = static_cast<int>(nodes.size());
      open.push_back(static_cast<int>(nodes.size()));
      nodes.push_back(child);
      birth.push_back(time);
    }
  };
  // With k lineages the next split comes after Exp(k); the floor keeps any
  // split from being a near-polytomy that no method could resolve.
  auto wait = [&](std::size_t k) {
    return (min_wait + (1.0 - min_wait) * s.exponential()) / static_cast<double>(k);
  };
  double time = 0.0;
  split(0, time);
  while (open.size() < static_cast<std::size_t>(p.proteomes)) {
    time += wait(open.size());
    const std::size_t i = s.below(open.size());
    const int node = open[i];
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
    nodes[static_cast<std::size_t>(node)].length = time - birth[static_cast<std::size_t>(node)];
    split(node, time);
  }
  time += wait(open.size());
  for (const int node : open) nodes[static_cast<std::size_t>(node)].length = time - birth[static_cast<std::size_t>(node)];

  // A relaxed clock: each branch evolves at its own rate, so leaves lie at
  // different depths. Then scaled to the mean root-to-leaf path asked for,
  // internal branches lengthened to min_internal * divergence where they
  // are shorter: a split a few substitutions deep, under branches a hundred
  // times longer, is lost to any distance method (concave distances such as
  // CVTree's then pull long branches together), and this is a test of the
  // method, not of luck. Twice, as the scaling undoes part of the floor; the
  // mean depth ends up a little above `divergence`.
  for (std::size_t i = 1; i < nodes.size(); ++i) nodes[i].length *= s.lognormal_mean1(clock_sigma);
  const double shortest = p.min_internal * p.divergence;
  for (int round = 0; round < 2; ++round) {
    std::vector<double> depth(nodes.size(), 0.0);
    double sum = 0.0;
    for (std::size_t i = 1; i < nodes.size(); ++i) {
      depth[i] = depth[static_cast<std::size_t>(nodes[i].parent)] + nodes[i].length;
      if (nodes[i].child[0] < 0) sum += depth[i];
    }
    const double scale = p.divergence / (sum / p.proteomes);
    for (std::size_t i = 1; i < nodes.size(); ++i) {
      nodes[i].length *= scale;
      if (nodes[i].child[0] >= 0) nodes[i].length = std::max(nodes[i].length, shortest);
    }
  }
  for (std::size_t i = 1; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    n.gc = nodes[static_cast<std::size_t>(n.parent)].gc + p.drift * std::sqrt(n.length) * s.normal();
  }
  for (std::size_t i = nodes.size(); i-- > 1;)
    if (nodes[i].child[0] >= 0)
      nodes[i].leaves = nodes[static_cast<std::size_t>(nodes[i].child[0])].leaves +
                        nodes[static_cast<std::size_t>(nodes[i].child[1])].leaves;
  nodes[0].leaves = p.proteomes;

  // Names in a random order, so a leaf's name says nothing of where it is.
  std::vector<int> numbers(open.size());
  for (std::size_t i = 0; i < numbers.size(); ++i) numbers[i] = static_cast<int>(i) + 1;
  for (std::size_t i = numbers.size(); i > 1; --i) std::swap(numbers[i - 1], numbers[s.below(i)]);
  const int width = std::max(2, static_cast<int>(std::to_string(p.proteomes).size()));
  for (std::size_t i = 0; i < open.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "P%0*d", width, numbers[i]);
    nodes[static_cast<std::size_t>(open[i])].name = name;
  }
  return nodes;
}

void write_newick(const std::vector<Node>& nodes, int node, std::string& out) {
  const Node& n = nodes[static_cast<std::size_t>(node)];
  if (n.child[0] < 0) {
    out += n.name;
  } else {
    out += '(';
    write_newick(nodes, n.child[0], out);
    out += ',';
    write_newick(nodes, n.child[1], out);
    out += ')';
  }
  if (node != 0) {
    char length[40];
    std::snprintf(length, sizeof length, ":%.6g", n.length);
    out += length;
  }
}

// ---------------------------------------------------------------------------
// Evolution along the tree

// The parent's genome becomes the node's: every gene evolves over the
// branch, then genes are lost and gained in proportion to its length. Each
// gene of the lineage is lost at loss_rate, while genes arrive at gain_rate
// times the root's protein count, so the proteome size returns towards
// proteins * gain_rate / loss_rate instead of growing or shrinking
// exponentially.
void evolve_branch(Genome& genome, const std::vector<Node>& nodes, int id, const Params& p) {
  const Node& node = nodes[static_cast<std::size_t>(id)];
  Stream s(p.seed, branch, static_cast<std::uint64_t>(id));
  const Composition c(node.gc);
  const double t = node.length;
  for (Gene& g : genome) evolve(g, t, c, p, s);
  std::erase_if(genome, [](const Gene& g) { return g.seq.size() < pseudogene; });

  const int losses = s.poisson(p.loss_rate * t * static_cast<double>(genome.size()));
  const int gains = s.poisson(p.gain_rate * t * p.proteins);
  for (int l = 0; l < losses && !genome.empty(); ++l)
    genome.erase(genome.begin() + static_cast<std::ptrdiff_t>(s.below(genome.size())));
  for (int k = 0; k < gains; ++k) {
    const double since = t * (1.0 - s.uniform());  // from the gain to the end of the branch
    std::size_t at = s.below(genome.size() + 1);
    Gene gene;
    if (!genome.empty() && s.uniform() < duplication_share) {
      // A duplicate: the copy alone carries the divergence of both copies
      // since the duplication, plus some for the relaxed selection on a
      // fresh duplicate; half of them stay next to their source (tandem).
      const std::size_t source = s.below(genome.size());
      gene = genome[source];
      evolve(gene, 2.0 * since + relaxed_divergence * s.uniform(), c, p, s);
      if (s.uniform() < 0.5) at = source + 1;
    } else {
      // From outside the tree (transfer from an unsampled donor, or de
      // novo): a composition of its own, then the lineage's substitutions.
      const Composition donor(node.gc + foreign_gc_sd * s.normal());
      gene = random_gene(draw_length(p, s), donor, p.rate_shape, s);
      evolve(gene, since, c, p, s);
    }
    if (gene.seq.size() >= pseudogene) genome.insert(genome.begin() + static_cast<std::ptrdiff_t>(at), std::move(gene));
  }
}

std::string fasta(const Genome& genome, const std::string& name) {
  std::size_t residues = 0;
  for (const Gene& g : genome) residues += g.seq.size();
  std::string out;
  out.reserve(residues + residues / 60 + genome.size() * (name.size() + 30));
  char header[64];
  for (std::size_t i = 0; i < genome.size(); ++i) {
    std::snprintf(header, sizeof header, "_g%06zu synthetic protein\n", i + 1);
    out += '>';
    out += name;
    out += header;
    const std::string& seq = genome[i].seq;
    for (std::size_t pos = 0; pos < seq.size(); pos += 60) {
      out.append(seq, pos, 60);
      out += '\n';
    }
  }
  return out;
}

// Depth first, the smaller subtree first and on a copy, the larger one on
// the genome itself: each copy held while descending at least halves the
// leaves below, so at most about log2(leaves) genomes are alive at once.
void descend(const std::vector<Node>& nodes, int id, Genome genome, const Params& p,
             const std::function<void(Proteome)>& leaf) {
  const Node& node = nodes[static_cast<std::size_t>(id)];
  if (node.child[0] < 0) {
    leaf(Proteome{node.name, fasta(genome, node.name)});
    return;
  }
  int small = node.child[0], large = node.child[1];
  if (nodes[static_cast<std::size_t>(small)].leaves > nodes[static_cast<std::size_t>(large)].leaves)
    std::swap(small, large);
  {
    Genome copy = genome;
    evolve_branch(copy, nodes, small, p);
    descend(nodes, small, std::move(copy), p, leaf);
  }
  evolve_branch(genome, nodes, large, p);
  descend(nodes, large, std::move(genome), p, leaf);
}

void check(bool ok, const char* name, const char* range, double value) {
  if (!ok) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", value);
    throw std::invalid_argument(std::string("flowd::cvtree::synth: ") + name + " must be " + range + ", got " + buf);
  }
}

}  // namespace

void validate(const Params& p) {
  check(p.proteomes >= 2 && p.proteomes <= 1000, "proteomes", "in [2, 1000]", p.proteomes);
  check(p.proteins >= 1 && p.proteins <= 100000, "proteins", "in [1, 100000]", p.proteins);
  check(p.mean_length >= 40 && p.mean_length <= 5000, "mean_length", "in [40, 5000]", p.mean_length);
  // Bounds on the size of a proteome and of the whole set (about 2 GB of
  // FASTA), so a mistyped count fails here rather than filling a disk.
  const double residues = static_cast<double>(p.proteins) * p.mean_length;
  check(residues <= 5e7, "proteins x mean_length", "at most 5e7 residues", residues);
  check(residues * p.proteomes <= 2e9, "proteomes x proteins x mean_length", "at most 2e9 residues",
        residues * p.proteomes);
  // Beyond 2 substitutions per site k-mers shared by descent are gone; real
  // proteins have well under 0.3 indels per substitution.
  check(p.divergence > 0.0 && p.divergence <= 2.0, "divergence", "in (0, 2]", p.divergence);
  check(p.indel_rate >= 0.0 && p.indel_rate <= 0.3, "indel_rate", "in [0, 0.3]", p.indel_rate);
  check(p.gain_rate >= 0.0 && p.gain_rate <= 2.0, "gain_rate", "in [0, 2]", p.gain_rate);
  check(p.loss_rate >= 0.0 && p.loss_rate <= 2.0, "loss_rate", "in [0, 2]", p.loss_rate);
  check(p.rate_shape >= 0.05 && p.rate_shape <= 100.0, "rate_shape", "in [0.05, 100]", p.rate_shape);
  check(p.drift >= 0.0 && p.drift <= 5.0, "drift", "in [0, 5]", p.drift);
  check(p.min_internal >= 0.0 && p.min_internal <= 0.3, "min_internal", "in [0, 0.3]", p.min_internal);
}

std::string generate(const Params& p, const std::function<void(Proteome)>& leaf) {
  validate(p);
  const std::vector<Node> nodes = random_tree(p);
  std::string newick;
  write_newick(nodes, 0, newick);
  newick += ';';
  descend(nodes, 0, root(p), p, leaf);
  return newick;
}

DataSet generate(const Params& p) {
  DataSet set;
  set.newick = generate(p, [&](Proteome leaf) { set.proteomes.push_back(std::move(leaf)); });
  std::sort(set.proteomes.begin(), set.proteomes.end(),
            [](const Proteome& a, const Proteome& b) { return a.name < b.name; });
  return set;
}

}  // namespace flowd::cvtree::synth
