#include "tree.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

namespace flowd::cvtree {

namespace {

// to_chars rather than printf: "%.17g" under a locale with a decimal comma
// would write a Newick no parser reads.
std::string format_number(double v) {
  std::array<char, 40> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::general, 17);
  return std::string(buf.data(), r.ptr);
}

// Spelled out rather than std::isspace, whose answer depends on the locale.
bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_newick_punctuation(char c) noexcept {
  return c == '(' || c == ')' || c == '[' || c == ']' || c == '\'' || c == ':' || c == ';' || c == ',';
}

void append_name(std::string& out, const std::string& name) {
  if (std::none_of(name.begin(), name.end(), [](char c) { return is_blank(c) || is_newick_punctuation(c); })) {
    out += name;
    return;
  }
  out += '\'';
  for (const char c : name) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
}

std::string quoted_name(const std::string& name) {
  std::string s;
  s += '\'';
  s += name;
  s += '\'';
  return s;
}

// ---------------------------------------------------------------- neighbour-joining

[[noreturn]] void nj_fail(const std::string& what) { throw std::invalid_argument("neighbour_joining: " + what); }

std::string cell(std::size_t i, std::size_t j) {
  return "d(" + std::to_string(i) + ", " + std::to_string(j) + ") (row " + std::to_string(i) + ", column " +
         std::to_string(j) + ")";
}

void check_nj_input(std::span<const double> d, std::size_t n, std::span<const std::string> names) {
  if (n == 0) nj_fail("no taxa (n = 0)");
  // d.size() == n * n without forming n * n, which could wrap.
  if (d.size() % n != 0 || d.size() / n != n)
    nj_fail("the matrix has " + std::to_string(d.size()) + " entries, n * n expected for n = " + std::to_string(n));
  if (names.size() != n) nj_fail(std::to_string(names.size()) + " names for n = " + std::to_string(n) + " taxa");
  for (std::size_t i = 0; i < n; ++i)
    if (names[i].empty()) nj_fail("name " + std::to_string(i) + " is empty");
  std::vector<std::size_t> by_name(n);
  for (std::size_t i = 0; i < n; ++i)
    by_name[i] = i;
  std::sort(by_name.begin(), by_name.end(), [&](std::size_t a, std::size_t b) { return names[a] < names[b]; });
  for (std::size_t k = 1; k < n; ++k)
    if (names[by_name[k - 1]] == names[by_name[k]])
      nj_fail("names " + std::to_string(std::min(by_name[k - 1], by_name[k])) + " and " +
              std::to_string(std::max(by_name[k - 1], by_name[k])) + " are both " + quoted_name(names[by_name[k]]));

  double largest = 0.0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const double v = d[i * n + j];
      if (!std::isfinite(v)) nj_fail(cell(i, j) + " is not finite: " + format_number(v));
      if (v < 0.0) nj_fail(cell(i, j) + " is negative: " + format_number(v));
      if (i == j && v != 0.0) nj_fail(cell(i, j) + " is on the diagonal and not zero: " + format_number(v));
      largest = std::max(largest, v);
    }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const double a = d[i * n + j];
      const double b = d[j * n + i];
      if (std::abs(a - b) > 1e-12 * std::max(a, b))
        nj_fail(cell(i, j) + " = " + format_number(a) + " and d(" + std::to_string(j) + ", " + std::to_string(i) +
                ") = " + format_number(b) + " differ by more than 1e-12 relative (the matrix must be symmetric)");
    }
  // Q sums up to 3n entries; refuse matrices whose sums would overflow
  // rather than join on infinities.
  if (!std::isfinite(largest * 4.0 * static_cast<double>(n)))
    nj_fail("entries up to " + format_number(largest) + " are too large: the row sums would overflow");
}

// A node of the tree being built: ids 0..n-1 are the leaves, n.. the joins in
// the order they are made (which is also the active order's).
struct BuiltNode {
  std::array<std::size_t, 3> child{};
  std::array<double, 3> length{};
  std::size_t children = 0;
};

void add_child(BuiltNode& node, std::size_t child, double length) {
  node.child[node.children] = child;
  node.length[node.children] = length;
  ++node.children;
}

// The minimum of v in eight independent running minima: one would be a
// single dependency chain, one compare per latency; eight overlap. NaN never
// wins.
double lane_min(const double* v, std::size_t count) {
  constexpr std::size_t lanes = 8;
  std::array<double, lanes> m;
  m.fill(std::numeric_limits<double>::infinity());
  std::size_t t = 0;
  for (; t + lanes <= count; t += lanes)
    for (std::size_t l = 0; l < lanes; ++l)
      m[l] = v[t + l] < m[l] ? v[t + l] : m[l];
  double best = std::numeric_limits<double>::infinity();
  for (; t < count; ++t)
    best = v[t] < best ? v[t] : best;
  for (const double x : m)
    best = x < best ? x : best;
  return best;
}

// Newick through a ParsedTree, in preorder from the root (an explicit stack:
// a caterpillar of a few thousand leaves is as deep as it is wide).
ParsedTree to_parsed(const std::vector<BuiltNode>& built, std::size_t root, std::span<const std::string> names) {
  const std::size_t n = names.size();
  struct Pending {
    std::size_t id;
    std::size_t parent;  // index in the ParsedTree, npos for the root
    double length;
  };
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  ParsedTree out;
  out.nodes.reserve(built.size());
  std::vector<Pending> stack{{root, none, 0.0}};
  while (!stack.empty()) {
    const Pending p = stack.back();
    stack.pop_back();
    const std::size_t index = out.nodes.size();
    NewickNode& node = out.nodes.emplace_back();
    if (p.id < n) node.name = names[p.id];
    if (p.parent != none) {
      node.length = p.length;
      out.nodes[p.parent].children.push_back(index);
    }
    const BuiltNode& b = built[p.id];
    for (std::size_t c = b.children; c-- > 0;)
      stack.push_back({b.child[c], index, b.length[c]});
  }
  return out;
}

}  // namespace

std::string neighbour_joining(std::span<const double> d, std::size_t n, std::span<const std::string> names) {
  check_nj_input(d, n, names);
  std::vector<BuiltNode> built(n);
  if (n == 1) return to_newick(to_parsed(built, 0, names));
  if (n == 2) {
    const double half = (d[1] + d[2]) / 4.0;  // the mean of d(0, 1) and d(1, 0), halved
    BuiltNode& root = built.emplace_back();
    add_child(root, 0, half);
    add_child(root, 1, half);
    return to_newick(to_parsed(built, 2, names));
  }

  // The active nodes live in slots 0..r-1 of an n x n row-major matrix: a
  // join puts the new node in the lower slot of the pair and moves the last
  // slot into the upper one, so the live block stays contiguous. Slot order
  // is thus not the active order; node ids (creation order) stand for it.
  std::vector<double> dist(n * n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      dist[i * n + j] = i == j ? 0.0 : (d[i * n + j] + d[j * n + i]) / 2.0;
  std::vector<double> row_sum(n, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < n; ++k)
      row_sum[i] += dist[i * n + k];
  std::vector<std::size_t> node_of(n);
  for (std::size_t i = 0; i < n; ++i)
    node_of[i] = i;
  std::vector<double> q(n);         // Q along one row of the upper triangle
  std::vector<double> to_new(n);    // d(u, k) of the node being made
  auto at = [&](std::size_t i, std::size_t k) -> double& { return dist[i * n + k]; };

  for (std::size_t r = n; r > 3; --r) {
    const double scale = static_cast<double>(r - 2);
    double best = std::numeric_limits<double>::infinity();
    bool found = false;
    std::size_t best_a = 0, best_b = 0;
    std::pair<std::size_t, std::size_t> best_key{};  // (earlier, later) node ids of the best pair
    for (std::size_t a = 0; a + 1 < r; ++a) {
      const std::size_t count = r - a - 1;
      const double* row = &dist[a * n + a + 1];
      const double* sums = &row_sum[a + 1];
      const double ra = row_sum[a];
      // (R_a + R_b) rather than - R_a - R_b: addition commutes bit for bit,
      // so Q(a, b) == Q(b, a) and ties do not depend on slot order.
      for (std::size_t t = 0; t < count; ++t)
        q[t] = scale * row[t] - (ra + sums[t]);
      const double m = lane_min(q.data(), count);
      if (!(m <= best)) continue;
      if (m < best) {
        best = m;
        found = false;
      }
      for (std::size_t t = 0; t < count; ++t) {
        if (q[t] != best) continue;
        const std::size_t b = a + 1 + t;
        const std::pair<std::size_t, std::size_t> key = std::minmax(node_of[a], node_of[b]);
        if (!found || key < best_key) {
          best_key = key;
          best_a = a;
          best_b = b;
          found = true;
        }
      }
    }
    if (!found) nj_fail("Q is not finite (the distances overflow)");

    const std::size_t si = node_of[best_a] < node_of[best_b] ? best_a : best_b;  // i, earlier in the active order
    const std::size_t sj = si == best_a ? best_b : best_a;
    const double dij = at(si, sj);
    // Fresh sums for the branch lengths: the running ones carry the rounding
    // of every earlier update, which (R_i - R_j) / (2 (r - 2)) would magnify
    // late in the run where r is small.
    double ri = 0.0, rj = 0.0;
    for (std::size_t k = 0; k < r; ++k) {
      ri += at(si, k);
      rj += at(sj, k);
    }
    const double li = dij / 2.0 + (ri - rj) / (2.0 * scale);
    const double lj = dij - li;
    const std::size_t u = built.size();
    BuiltNode& joined = built.emplace_back();
    add_child(joined, node_of[si], li);
    add_child(joined, node_of[sj], lj);

    double ru = 0.0;
    for (std::size_t k = 0; k < r; ++k) {
      if (k == si || k == sj) continue;
      const double dik = at(si, k);
      const double djk = at(sj, k);
      const double duk = (dik + djk - dij) / 2.0;
      to_new[k] = duk;
      row_sum[k] += duk - (dik + djk);
      ru += duk;
    }
    const std::size_t lo = std::min(si, sj);
    const std::size_t hi = std::max(si, sj);
    for (std::size_t k = 0; k < r; ++k) {
      if (k == si || k == sj) continue;
      at(lo, k) = to_new[k];
      at(k, lo) = to_new[k];
    }
    at(lo, lo) = 0.0;
    row_sum[lo] = ru;
    node_of[lo] = u;
    const std::size_t last = r - 1;
    if (hi != last) {
      for (std::size_t k = 0; k < last; ++k) {
        at(hi, k) = at(last, k);
        at(k, hi) = at(k, last);
      }
      at(hi, hi) = 0.0;
      row_sum[hi] = row_sum[last];
      node_of[hi] = node_of[last];
    }
  }

  // The last three, in active order, around the central node.
  std::array<std::size_t, 3> slot{0, 1, 2};
  std::sort(slot.begin(), slot.end(), [&](std::size_t a, std::size_t b) { return node_of[a] < node_of[b]; });
  const double dab = at(slot[0], slot[1]);
  const double dac = at(slot[0], slot[2]);
  const double dbc = at(slot[1], slot[2]);
  const std::size_t root = built.size();
  BuiltNode& centre = built.emplace_back();
  add_child(centre, node_of[slot[0]], (dab + dac - dbc) / 2.0);
  add_child(centre, node_of[slot[1]], (dab + dbc - dac) / 2.0);
  add_child(centre, node_of[slot[2]], (dac + dbc - dab) / 2.0);
  for (const BuiltNode& b : built)
    for (std::size_t c = 0; c < b.children; ++c)
      if (!std::isfinite(b.length[c])) nj_fail("a branch length is not finite (the distances overflow)");
  return to_newick(to_parsed(built, root, names));
}

// ---------------------------------------------------------------- Newick

namespace {

class NewickReader {
 public:
  explicit NewickReader(std::string_view text) : text_(text) {}

  ParsedTree read() {
    ParsedTree tree;
    std::vector<std::size_t> open;  // inner nodes whose ')' is still to come
    bool expect_node = true;
    while (true) {
      skip();
      if (expect_node) {
        const std::size_t index = tree.nodes.size();
        tree.nodes.emplace_back();
        if (!open.empty()) tree.nodes[open.back()].children.push_back(index);
        if (peek() == '(') {
          ++pos_;
          open.push_back(index);
          continue;
        }
        read_label(tree.nodes[index]);  // a leaf, its name possibly empty as in "(,)"
        expect_node = false;
        continue;
      }
      if (open.empty()) break;
      if (at_end()) fail("unexpected end of text, expected ',' or ')'");
      if (peek() == ',') {
        ++pos_;
        expect_node = true;
      } else if (peek() == ')') {
        ++pos_;
        const std::size_t closed = open.back();
        open.pop_back();
        read_label(tree.nodes[closed]);
      } else {
        fail(std::string("expected ',' or ')', found '") + peek() + "'");
      }
    }
    if (at_end()) fail("unexpected end of text, expected ';'");
    if (peek() != ';') fail(std::string("expected ';', found '") + peek() + "'");
    ++pos_;
    skip();
    if (!at_end()) fail("text after the closing ';'");
    return tree;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  [[noreturn]] void fail_at(std::size_t offset, const std::string& what) const {
    throw std::invalid_argument("parse_newick: " + what + " at offset " + std::to_string(offset));
  }

  bool at_end() const noexcept { return pos_ >= text_.size(); }
  char peek() const noexcept { return at_end() ? '\0' : text_[pos_]; }

  // Whitespace and [comments].
  void skip() {
    while (!at_end()) {
      if (is_blank(peek())) {
        ++pos_;
      } else if (peek() == '[') {
        const std::size_t close = text_.find(']', pos_ + 1);
        if (close == std::string_view::npos) fail("unterminated comment");
        pos_ = close + 1;
      } else {
        break;
      }
    }
  }

  // A name (possibly empty) and an optional ":length".
  void read_label(NewickNode& node) {
    skip();
    if (peek() == '\'') {
      const std::size_t start = pos_++;
      while (true) {
        if (at_end()) fail_at(start, "unterminated quoted name");
        const char c = text_[pos_++];
        if (c != '\'') {
          node.name += c;
        } else if (peek() == '\'') {
          node.name += '\'';
          ++pos_;
        } else {
          break;
        }
      }
    } else {
      const std::size_t start = pos_;
      while (!at_end() && !is_blank(peek()) && !is_newick_punctuation(peek()))
        ++pos_;
      node.name.assign(text_.substr(start, pos_ - start));
    }
    skip();
    if (peek() != ':') return;
    ++pos_;
    skip();
    const std::size_t start = pos_;
    // from_chars takes no leading '+', which some writers put on lengths.
    if (peek() == '+' && pos_ + 1 < text_.size() && text_[pos_ + 1] != '-' && text_[pos_ + 1] != '+') ++pos_;
    double value = 0.0;
    const auto r = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), value);
    if (r.ec == std::errc::result_out_of_range) fail_at(start, "branch length out of range");
    if (r.ec != std::errc{}) fail_at(start, "expected a branch length after ':'");
    if (!std::isfinite(value)) fail_at(start, "branch length is not finite");
    pos_ = static_cast<std::size_t>(r.ptr - text_.data());
    node.length = value;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// Throws unless the nodes form one tree rooted at nodes[0], in preorder.
void check_tree(const ParsedTree& tree, const std::string& who) {
  const std::size_t size = tree.nodes.size();
  if (size == 0) throw std::invalid_argument(who + ": the tree has no nodes");
  std::vector<char> has_parent(size, 0);
  for (std::size_t v = 0; v < size; ++v)
    for (const std::size_t c : tree.nodes[v].children) {
      if (c <= v || c >= size)
        throw std::invalid_argument(who + ": node " + std::to_string(v) + " lists child " + std::to_string(c) +
                                    ", which is not a later node of the tree");
      if (has_parent[c]) throw std::invalid_argument(who + ": node " + std::to_string(c) + " has two parents");
      has_parent[c] = 1;
    }
  for (std::size_t v = 1; v < size; ++v)
    if (!has_parent[v]) throw std::invalid_argument(who + ": node " + std::to_string(v) + " has no parent");
}

}  // namespace

ParsedTree parse_newick(std::string_view text) { return NewickReader(text).read(); }

std::string to_newick(const ParsedTree& tree) {
  check_tree(tree, "to_newick");
  std::string out;
  auto write_label = [&](const NewickNode& node) {
    append_name(out, node.name);
    if (node.length) {
      out += ':';
      out += format_number(*node.length);
    }
  };
  // (node, next child to write); explicit, as the tree may be thousands deep.
  std::vector<std::pair<std::size_t, std::size_t>> stack{{0, 0}};
  while (!stack.empty()) {
    const auto [v, next] = stack.back();
    const NewickNode& node = tree.nodes[v];
    if (next < node.children.size()) {
      out += next == 0 ? '(' : ',';
      ++stack.back().second;
      stack.emplace_back(node.children[next], 0);
      continue;
    }
    if (!node.children.empty()) out += ')';
    write_label(node);
    stack.pop_back();
  }
  out += ';';
  return out;
}

// ---------------------------------------------------------------- Robinson-Foulds

namespace {

using Split = std::vector<std::uint64_t>;  // a bitset over the sorted leaf names

// The leaf names of a tree, sorted; throws on empty or repeated names.
std::vector<std::string> sorted_leaf_names(const ParsedTree& tree, const char* which) {
  std::vector<std::string> names;
  for (std::size_t v = 0; v < tree.nodes.size(); ++v) {
    const NewickNode& node = tree.nodes[v];
    if (!node.children.empty()) continue;
    if (node.name.empty())
      throw std::invalid_argument(std::string("robinson_foulds: leaf node ") + std::to_string(v) + " of the " + which +
                                  " tree has no name");
    names.push_back(node.name);
  }
  std::sort(names.begin(), names.end());
  const auto twice = std::adjacent_find(names.begin(), names.end());
  if (twice != names.end())
    throw std::invalid_argument("robinson_foulds: leaf " + quoted_name(*twice) + " appears more than once in the " + which +
                                " tree");
  return names;
}

// The non-trivial splits of a tree, each normalised to the side without leaf
// 0 so that a split and its complement compare equal; sorted, no repeats.
std::vector<Split> splits_of(const ParsedTree& tree, const std::vector<std::string>& leaves) {
  const std::size_t count = leaves.size();
  const std::size_t words = (count + 63) / 64;
  const std::size_t size = tree.nodes.size();
  std::vector<std::uint64_t> below(size * words, 0);  // the leaves under each node
  // Children come after their parents, so a backward pass is bottom-up.
  for (std::size_t v = size; v-- > 0;) {
    const NewickNode& node = tree.nodes[v];
    std::uint64_t* bits = &below[v * words];
    if (node.children.empty()) {
      const auto leaf = static_cast<std::size_t>(std::lower_bound(leaves.begin(), leaves.end(), node.name) -
                                                 leaves.begin());
      bits[leaf / 64] |= std::uint64_t{1} << (leaf % 64);
      continue;
    }
    for (const std::size_t c : node.children)
      for (std::size_t w = 0; w < words; ++w)
        bits[w] |= below[c * words + w];
  }
  const std::uint64_t last_word_mask =
      count % 64 == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << (count % 64)) - 1;
  std::vector<Split> splits;
  for (std::size_t v = 1; v < size; ++v) {  // the root's edge set is every leaf: trivial
    const std::uint64_t* bits = &below[v * words];
    std::size_t on = 0;
    for (std::size_t w = 0; w < words; ++w)
      on += static_cast<std::size_t>(std::popcount(bits[w]));
    if (on < 2 || on + 2 > count) continue;
    Split s(bits, bits + words);
    if (s[0] & 1) {
      for (std::uint64_t& w : s)
        w = ~w;
      s.back() &= last_word_mask;
    }
    splits.push_back(std::move(s));
  }
  std::sort(splits.begin(), splits.end());
  splits.erase(std::unique(splits.begin(), splits.end()), splits.end());
  return splits;
}

}  // namespace

std::size_t robinson_foulds(const ParsedTree& a, const ParsedTree& b) {
  check_tree(a, "robinson_foulds (first tree)");
  check_tree(b, "robinson_foulds (second tree)");
  const std::vector<std::string> leaves = sorted_leaf_names(a, "first");
  const std::vector<std::string> other = sorted_leaf_names(b, "second");
  if (leaves != other) {
    const auto [ia, ib] = std::mismatch(leaves.begin(), leaves.end(), other.begin(), other.end());
    if (ib == other.end() || (ia != leaves.end() && *ia < *ib))
      throw std::invalid_argument("robinson_foulds: leaf " + quoted_name(*ia) +
                                  " is in the first tree but not in the second");
    throw std::invalid_argument("robinson_foulds: leaf " + quoted_name(*ib) + " is in the second tree but not in the first");
  }
  const std::vector<Split> sa = splits_of(a, leaves);
  const std::vector<Split> sb = splits_of(b, leaves);
  std::size_t common = 0;
  for (auto x = sa.begin(), y = sb.begin(); x != sa.end() && y != sb.end();) {
    if (*x < *y) {
      ++x;
    } else if (*y < *x) {
      ++y;
    } else {
      ++common;
      ++x;
      ++y;
    }
  }
  return sa.size() + sb.size() - 2 * common;
}

std::size_t max_robinson_foulds(std::size_t leaves) { return leaves >= 3 ? 2 * (leaves - 3) : 0; }

}  // namespace flowd::cvtree
