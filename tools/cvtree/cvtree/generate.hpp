#pragma once
// Synthetic bacterial proteomes evolved along a known random tree, with the
// tree: test and judging data for alignment-free phylogeny (CVTree
// composition vectors and neighbour-joining; docs/tools.md, "Synthetic
// proteomes along a known tree").
//
// The root proteome has `proteins` proteins: lengths log-normal (mean
// `mean_length`, at least 30, right-skewed like real bacterial proteomes),
// each starting with M, residues drawn from the UniProtKB/Swiss-Prot
// background composition. About one protein in seven belongs to a
// paralogous family (copies of a founder diverged by 0.3-1.5 substitutions
// per site), 8 % carry a diverged copy of a segment of another protein (a
// shared domain), 4 % a low-complexity stretch (homopolymer, short tandem
// repeat or a two-three residue mix). Every site has its own rate (gamma,
// shape `rate_shape`) times its gene's (log-normal), kept through the tree.
//
// The tree is a Yule (pure-birth) tree over `proteomes` leaves whose
// branches are then stretched by independent log-normal rates (a relaxed
// clock, spread 0.25), so leaves lie at different depths; it is scaled so
// the mean root-to-leaf path is about `divergence` expected substitutions
// per site, and no internal branch is shorter than `min_internal` times
// that, so every split leaves a trace a distance method can find (with
// many proteomes those floors make the tree deeper than `divergence`).
// Along each branch the parent proteome gets substitutions (Poisson per
// site; a replacement residue drawn from the lineage's composition, half of
// them within the residue's similarity group), insertions (half of them
// tandem copies of the residues before) and deletions of geometric length,
// gene gains (duplicates of a gene of the lineage, or genes from outside the
// tree with a composition of their own; at a rate per root protein) and
// gene losses (per gene of the lineage), all in proportion to the branch
// length; the proteome size tends to proteins * gain_rate / loss_rate.
// Proteins that deletions cut below 10 residues are lost (pseudogenes).
// Each lineage's composition drifts along a GC-like
// axis (G, A, R, P against F, Y, M, I, N, K) as a Brownian motion of
// strength `drift`: composition that is shared by descent and sometimes by
// chance, the signal CVTree's Markov subtraction is there to remove.
//
// What real proteomes have and this leaves out: real protein families,
// domains and structure (sequences are random apart from the copies above;
// no dependence between neighbouring residues, no secondary-structure
// periodicity, no signal peptides or transmembrane segments); functional
// constraint beyond fixed per-site and per-gene rates (no covarion shifts,
// no selection on whole proteins); horizontal transfer between the sampled
// lineages (genes from outside come from nowhere in the tree, so the gene
// content never contradicts the tree), incomplete lineage sorting,
// recombination and hybridisation; paralogues lost differentially long
// before the root; gene order, operons and rearrangements (irrelevant to
// composition vectors); mis-annotated and fragmentary genes, frameshifts,
// selenocysteine and ambiguous residues (X, B, Z); plasmids. Residues
// evolve independently, so k-mers are shared only by descent, by the
// copies above or by chance.
//
// Everything is deterministic in Params on one build and machine: draws
// come from tools/common's counter-based stream (no std distribution), keyed
// by the seed and what they are for (the tree, the root, each branch); the
// C library's exp and log do the rest.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flowd::cvtree::synth {

struct Params {
  int proteomes = 8;          // leaves of the tree, named P01, P02, ... (width of the count, at least 2)
  int proteins = 3000;        // proteins of the root proteome
  int mean_length = 330;      // mean length of the root's proteins, residues (each at least 30)
  double divergence = 0.25;   // mean root-to-leaf path, expected substitutions per site
  double indel_rate = 0.05;   // insertions and deletions per site per expected substitution
  double gain_rate = 0.4;     // genes gained per root protein per expected substitution per site
  double loss_rate = 0.4;     // genes lost per gene of the lineage per expected substitution per site
  double rate_shape = 0.8;    // gamma shape of the rates across sites (smaller: more unequal)
  double drift = 1.0;         // composition drift: SD of the GC-like axis per sqrt(substitution per site)
  double min_internal = 0.15; // shortest internal branch, a share of `divergence` (0: as the tree came)
  std::uint64_t seed = 1;
};

// Throws std::invalid_argument naming the first parameter outside its range
// and the range.
void validate(const Params& p);

struct Proteome {
  std::string name;   // "P01"
  std::string fasta;  // ">P01_g000001 synthetic protein" then the sequence in lines of 60
};

struct DataSet {
  std::vector<Proteome> proteomes;  // in name order
  std::string newick;               // the true rooted tree, leaves named as the proteomes, branch lengths
};

// The whole data set; holds every leaf proteome at once (about 1.1 MB each
// at the defaults).
DataSet generate(const Params& p);

// The same data set, each proteome handed to `leaf` as soon as its branch is
// done (depth first, not in name order); returns the Newick tree. At most
// about log2(proteomes) + 2 proteomes are held at a time.
std::string generate(const Params& p, const std::function<void(Proteome)>& leaf);

}  // namespace flowd::cvtree::synth
