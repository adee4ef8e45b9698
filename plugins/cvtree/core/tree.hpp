#pragma once
// The tree half of CVTree: neighbour-joining on a distance matrix written as
// Newick, a Newick parser and printer, and the Robinson-Foulds distance
// between two trees on the same leaves.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace flowd::cvtree {

// Neighbour-joining (Saitou & Nei 1987) with Studier & Keppler's criterion,
// over the r active nodes, R_i = sum_k d(i, k):
//   Q(i, j) = (r - 2) d(i, j) - (R_i + R_j), the pair with the smallest Q is
//   joined into a new node u with
//   d(i, u) = d(i, j) / 2 + (R_i - R_j) / (2 (r - 2)),  d(j, u) = d(i, j) - d(i, u),
//   d(u, k) = (d(i, k) + d(j, k) - d(i, j)) / 2.
// When three nodes are left they are joined at one central node (the unrooted
// trifurcation, which becomes the Newick root) with the three-point formulas
// d(a, c) = (d(a, b) + d(a, e) - d(b, e)) / 2 and so on.
//
// Active order: the leaves in input order, then each new node appended at
// the end when it is made; a joined pair leaves the order.
// Ties: among pairs whose Q values are exactly equal (as doubles), the pair
// (i, j), i before j in the active order, that comes first in the
// lexicographic order of (position of i, position of j) is joined; i.e. the
// smallest i, then the smallest j. Q is formed as above, symmetric in i and j
// bit for bit, so the choice does not depend on how the pair is scanned.
// Row sums are kept up to date incrementally; Q and its ties are those of the
// values so computed. The branch lengths of a join use R_i and R_j summed
// afresh, free of the rounding the running sums gather.
//
// Output: "(A:0.1,B:0.2,(C:0.3,D:0.4):0.05);". Each new node lists the joined
// pair, i then j; the root lists the last three nodes in active order.
// Branch lengths are printed with 17 significant digits (%.17g, C locale) so
// the tree reads back to the same doubles. Names are written as given, or
// single-quoted (inner quotes doubled) when they hold whitespace or one of
// ()[]':;, . n = 1 gives "A;", n = 2 "(A:d/2,B:d/2);", n = 3 the
// trifurcation.
//
// Negative branch lengths (from a matrix that is not additive) are kept as
// computed, as PHYLIP's neighbor keeps them: clamping them to zero would
// change the path lengths the joins reconstruct without making the tree any
// more right, and would hide from the reader how far the data are from a
// tree.
//
// d is n x n, row-major: entries finite, >= 0, a zero diagonal, symmetric to
// 1e-12 relative (the mean of d(i, j) and d(j, i) is used). names: n
// distinct, non-empty names (duplicates or empty names would make the
// leaves of the tree indistinguishable). std::invalid_argument otherwise,
// naming the row and column (0-based), and for entries so large that the
// row sums would overflow. O(n^3) time, O(n^2) memory.
std::string neighbour_joining(std::span<const double> d, std::size_t n, std::span<const std::string> names);

// One node of a parsed Newick tree.
struct NewickNode {
  std::string name;                   // a leaf's name or an inner node's label; may be empty
  std::optional<double> length;       // of the branch to the parent, when the text gives one
  std::vector<std::size_t> children;  // indices into ParsedTree::nodes, in text order
};

// A rooted tree as the Newick text draws it. nodes[0] is the root, and every
// node comes before its children (preorder), so a backward pass over nodes
// visits children before parents. A node without children is a leaf.
struct ParsedTree {
  std::vector<NewickNode> nodes;
};

// Parses one Newick tree: nested parentheses, names (unquoted, or in single
// quotes with '' for a quote), optional ":length" on any node, labels on
// inner nodes, whitespace and [comments] (dropped) between tokens, and the
// closing ';' (required: a tree cut short by a truncated file must not read
// as a smaller tree; only whitespace may follow it). Underscores in unquoted
// names are kept as they are, not read as blanks, so that names round-trip
// through to_newick. Branch lengths must be finite. std::invalid_argument
// with the 0-based character offset of the error otherwise.
ParsedTree parse_newick(std::string_view text);

// Writes a tree in the format neighbour_joining uses (names quoted as needed,
// lengths with 17 significant digits, a closing ';'); parse_newick reads it
// back to an equal tree. std::invalid_argument if the nodes do not form a
// tree in preorder as ParsedTree describes.
std::string to_newick(const ParsedTree& tree);

// The unrooted Robinson-Foulds distance: the number of non-trivial splits of
// the leaf set (both sides with >= 2 leaves) found in exactly one of the two
// trees. Each edge below the root makes one split; a root of degree 2 and
// nodes with one child repeat a split and count once, so a rooted tree and
// its unrooted form are at distance 0. Leaves are matched by name: names
// must be non-empty and distinct within a tree, and the two trees must have
// the same leaves (std::invalid_argument naming a leaf missing from one).
// For n leaves and N nodes: N n / 64 words of memory, O(N n / 64 log n)
// time.
std::size_t robinson_foulds(const ParsedTree& a, const ParsedTree& b);

// The largest RF distance between two binary unrooted trees on the same
// leaves, 2 (n - 3) for n >= 3 (each has n - 3 non-trivial splits); 0 below.
std::size_t max_robinson_foulds(std::size_t leaves);

}  // namespace flowd::cvtree
