#include "placement/model.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace flowd::placement {

void check(const Problem& p) {
  if (p.sites.size() < 1 || p.sites.links.size() + 1 != p.sites.size())
    throw std::invalid_argument("placement: the sites must form a chain (one link between each two)");
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const StageCost& s = p.stages[i];
    if (!(s.seconds >= 0) || !(s.bytes_out >= 0) || !(s.items_out >= 0) || !(s.input_bytes >= 0))
      throw std::invalid_argument("placement: stage '" + s.name + "' has a negative or unknown cost");
    if (!p.fixed.empty() && p.fixed.size() != p.stages.size())
      throw std::invalid_argument("placement: fixed sites for " + std::to_string(p.fixed.size()) + " of " +
                                  std::to_string(p.stages.size()) + " stages");
    if (!p.fixed.empty() && p.fixed[i] && *p.fixed[i] >= p.sites.size())
      throw std::invalid_argument("placement: stage '" + s.name + "' is fixed to a site that does not exist");
    for (const std::size_t c : s.consumers)
      if (c <= i || c >= p.stages.size())
        throw std::invalid_argument("placement: stage '" + s.name + "' feeds stage " + std::to_string(c) +
                                    ", which is not after it in the order");
  }
}

namespace {

// The first stage off the chain or off the site it is fixed to (`where`
// has a site for every stage).
std::optional<std::size_t> misplaced(const Problem& p, const Placement& where) {
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    if (where[i] >= p.sites.size()) return i;
    if (!p.fixed.empty() && p.fixed[i] && *p.fixed[i] != where[i]) return i;
  }
  return std::nullopt;
}

}  // namespace

bool feasible(const Problem& p, const Placement& where) {
  return where.size() == p.stages.size() && !misplaced(p, where);
}

namespace {

// Adds `bytes` and `items` per source item sent from site `from` to site
// `to` along the chain: forward links (index j: site j to j + 1) when `to`
// lies after `from`, backward ones (index m − 1 + j: site j + 1 to j) when
// before. Each direction of a link has the link's bandwidth. The two ends
// also note the bytes they moved (`moved`: what their hosts' CPUs pay);
// sites between them forward at the network's level, which costs them none.
void cross(const Problem& p, Prediction& out, std::vector<bool>& used, std::vector<double>& moved, std::size_t from,
           std::size_t to, double bytes, double items) {
  const std::size_t back = p.sites.links.size();
  const std::size_t lo = std::min(from, to), hi = std::max(from, to);
  for (std::size_t j = lo; j < hi; ++j) {
    const Link& l = p.sites.links[j];
    const std::size_t d = to > from ? j : back + j;
    out.link_seconds[d] += bytes / l.bandwidth + items * l.message_overhead;
    out.link_bytes[d] += bytes;
    used[d] = used[d] || bytes > 0 || items > 0;
  }
  if (from != to) {
    moved[from] += bytes;
    moved[to] += bytes;
  }
}

// T(H) of every host, from each site's compute per item at speed 1 and the
// bytes its sites send and receive.
void hosts(const Problem& p, Prediction& out, const std::vector<double>& parallel, const std::vector<double>& moved) {
  out.host_seconds.assign(p.sites.hosts.size(), 0.0);
  out.host_moved_bytes.assign(p.sites.hosts.size(), 0.0);
  for (std::size_t h = 0; h < p.sites.hosts.size(); ++h) {
    const Host& host = p.sites.hosts[h];
    for (const std::size_t j : host.sites) {
      out.host_seconds[h] += parallel[j] / p.sites.sites[j].speed + moved[j] * host.transfer_cpu;
      out.host_moved_bytes[h] += moved[j];
    }
    out.host_seconds[h] /= host.cores;
  }
}

// The slowest resource a source at `site` does not share: the other sites,
// the links, the hosts `site` is not on.
double slowest_unshared(const Problem& p, const Prediction& out, std::size_t site) {
  double slowest = 0;
  for (std::size_t j = 0; j < out.site_seconds.size(); ++j)
    if (j != site) slowest = std::max(slowest, out.site_seconds[j]);
  for (const double l : out.link_seconds) slowest = std::max(slowest, l);
  for (std::size_t h = 0; h < out.host_seconds.size(); ++h) {
    const auto& on = p.sites.hosts[h].sites;
    if (std::find(on.begin(), on.end(), site) == on.end()) slowest = std::max(slowest, out.host_seconds[h]);
  }
  return slowest;
}

void finish(const Problem& p, Prediction& out, const std::vector<bool>& used) {
  double sum = 0;
  out.bottleneck = -1;
  for (std::size_t j = 0; j < out.site_seconds.size(); ++j) {
    sum += out.site_seconds[j];
    if (out.site_seconds[j] > out.bottleneck) {
      out.bottleneck = out.site_seconds[j];
      out.bottleneck_name = "site " + p.sites.sites[j].name;
    }
  }
  const std::size_t links = p.sites.links.size();
  for (std::size_t d = 0; d < out.link_seconds.size(); ++d) {
    const std::size_t j = d % links;
    sum += out.link_seconds[d] + (used[d] ? p.sites.links[j].latency : 0.0);
    if (out.link_seconds[d] > out.bottleneck) {
      out.bottleneck = out.link_seconds[d];
      out.bottleneck_name = d < links ? "link " + p.sites.sites[j].name + " -> " + p.sites.sites[j + 1].name
                                      : "link " + p.sites.sites[j + 1].name + " -> " + p.sites.sites[j].name;
    }
  }
  for (std::size_t h = 0; h < out.host_seconds.size(); ++h)
    if (out.host_seconds[h] > out.bottleneck) {
      out.bottleneck = out.host_seconds[h];
      out.bottleneck_name = "host " + p.sites.hosts[h].name;
    }
  const double n = static_cast<double>(std::max<std::uint64_t>(p.items, 1));
  out.total = (n - 1) * out.bottleneck + sum;
}

// A bursty source (StageCost::burst = k) does k items' work in one call and
// hands them over together. The steady state does not change, but the
// stream's ends do: its first item comes (k − 1) × S later (S: the source's
// time per item), or, when the source is the slower, its last k items reach
// the stages after it at once and leave one bottleneck time apart, (k − 1) ×
// B later (B: the slowest resource it does not share). Whichever the case,
// (k − 1) × min(S, B); what it shares (its site, its host) is busy with its
// work meanwhile and loses nothing. Sources run side by side: the longest
// delay counts.
void add_bursts(const Problem& p, const Placement& where, Prediction& out) {
  double delay = 0;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const StageCost& s = p.stages[i];
    if (!s.source || !(s.burst > 1)) continue;
    const double per_item = s.seconds / p.sites.sites[where[i]].speed;
    delay = std::max(delay, (s.burst - 1) * std::min(per_item, slowest_unshared(p, out, where[i])));
  }
  out.burst_seconds = delay;
  out.total += delay;
}

Prediction empty_prediction(const Problem& p) {
  Prediction out;
  out.site_seconds.assign(p.sites.size(), 0.0);
  out.link_seconds.assign(2 * p.sites.links.size(), 0.0);
  out.link_bytes.assign(2 * p.sites.links.size(), 0.0);
  return out;
}

double capacity(const Site& s) { return s.speed * static_cast<double>(s.nodes); }

// The share of a stage's inputs made on another of its site's worker nodes:
// tasks spread over the site's n nodes, so (n − 1) / n of them pull what
// they read from a node of their own site, a crossing between two
// processes that costs the site's host both ends but no link
// (docs/benchmarks.md §15.8: on the 2-2-1 chain, all at data kept the two
// data nodes pulling tiles from each other).
double elsewhere_on(const Site& s) {
  return s.nodes > 1 ? static_cast<double>(s.nodes - 1) / static_cast<double>(s.nodes) : 0.0;
}

}  // namespace

double site_time(const Site& s, double parallel, double serial) {
  return std::max(parallel / capacity(s), serial / s.speed);
}

Prediction predict(const Problem& p, const Placement& where) {
  if (where.size() != p.stages.size())
    throw std::invalid_argument("placement: sites for " + std::to_string(where.size()) + " of " +
                                std::to_string(p.stages.size()) + " stages");
  if (const auto i = misplaced(p, where)) {
    const std::string& stage = p.stages[*i].name;
    if (where[*i] >= p.sites.size())
      throw std::invalid_argument("placement: stage '" + stage + "' is placed on site " + std::to_string(where[*i]) +
                                  ", which does not exist");
    throw std::invalid_argument("placement: stage '" + stage + "' is placed at site '" +
                                p.sites.sites[where[*i]].name + "' but must stay at '" +
                                p.sites.sites[*p.fixed[*i]].name + "'");
  }
  Prediction out = empty_prediction(p);
  std::vector<bool> used(2 * p.sites.links.size(), false);
  std::vector<double> moved(p.sites.size(), 0.0);
  const std::size_t last = p.sites.size() - 1;
  std::vector<double> parallel(p.sites.size(), 0.0), serial(p.sites.size(), 0.0);
  // At the coordinator's site, sources and sinks run in the coordinator's
  // process and every other stage on a worker node there: an item between
  // the two crosses no link, but still moves between two processes, whose
  // host pays for it at both ends.
  const std::size_t home = p.sites.coordinator < p.sites.size() ? p.sites.coordinator : last;
  const auto in_coordinator = [&](std::size_t k) {
    return where[k] == home && (p.stages[k].source || p.stages[k].sink);
  };
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const StageCost& s = p.stages[i];
    parallel[where[i]] += s.seconds;
    if (s.source) serial[where[i]] += s.seconds;
    if (s.source && s.input_bytes > 0) cross(p, out, used, moved, 0, where[i], s.input_bytes, 1.0);
    // Each consumer on another site pulls the output from where it was
    // made (flowd does not relay items), and a sink's results go to the
    // last site.
    for (const std::size_t c : s.consumers) {
      if (where[c] != where[i])
        cross(p, out, used, moved, where[i], where[c], s.bytes_out, s.items_out);
      else if (in_coordinator(i) != in_coordinator(c))
        moved[where[i]] += 2 * s.bytes_out;  // two processes of one site: both ends there
      else if (!in_coordinator(i))
        moved[where[i]] += 2 * s.bytes_out * elsewhere_on(p.sites.sites[where[i]]);
    }
    if (s.sink) cross(p, out, used, moved, where[i], last, s.bytes_out, s.items_out);
  }
  for (std::size_t j = 0; j < p.sites.size(); ++j) out.site_seconds[j] = site_time(p.sites.sites[j], parallel[j], serial[j]);
  hosts(p, out, parallel, moved);
  finish(p, out, used);
  add_bursts(p, where, out);
  return out;
}

Prediction predict_demand_driven(const Problem& p) {
  Prediction out = empty_prediction(p);
  std::vector<bool> used(2 * p.sites.links.size(), false);
  std::vector<double> moved(p.sites.size(), 0.0);
  const std::size_t last = p.sites.size() - 1, home = p.sites.coordinator < p.sites.size() ? p.sites.coordinator : last;
  double total_capacity = 0;
  for (const Site& s : p.sites.sites) total_capacity += capacity(s);
  std::vector<double> parallel(p.sites.size(), 0.0), serial(p.sites.size(), 0.0);
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const StageCost& s = p.stages[i];
    const bool on_coordinator = s.source || s.sink;
    if (on_coordinator) {
      parallel[home] += s.seconds;
      if (s.source) serial[home] += s.seconds;
      if (s.source && s.input_bytes > 0) cross(p, out, used, moved, 0, home, s.input_bytes, 1.0);
      if (s.sink) cross(p, out, used, moved, home, last, s.bytes_out, s.items_out);
      continue;
    }
    // Its share on each site: compute there, its inputs out from the
    // coordinator and its outputs back.
    double in_bytes = 0, in_items = 0;
    for (std::size_t q = 0; q < i; ++q)
      if (std::find(p.stages[q].consumers.begin(), p.stages[q].consumers.end(), i) != p.stages[q].consumers.end()) {
        in_bytes += p.stages[q].bytes_out;
        in_items += p.stages[q].items_out;
      }
    for (std::size_t j = 0; j < p.sites.size(); ++j) {
      const double share = capacity(p.sites.sites[j]) / total_capacity;
      parallel[j] += share * s.seconds;
      cross(p, out, used, moved, home, j, share * in_bytes, share * in_items);
      cross(p, out, used, moved, j, home, share * s.bytes_out, share * s.items_out);
    }
  }
  for (std::size_t j = 0; j < p.sites.size(); ++j) out.site_seconds[j] = site_time(p.sites.sites[j], parallel[j], serial[j]);
  hosts(p, out, parallel, moved);
  finish(p, out, used);
  add_bursts(p, Placement(p.stages.size(), home), out);
  return out;
}

std::vector<std::vector<std::size_t>> fused_groups(const Problem& p, const Placement& where) {
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < p.stages.size(); ++i) {
    const bool joins = i > 0 && where[i] == where[i - 1] &&
                       std::find(p.stages[i - 1].consumers.begin(), p.stages[i - 1].consumers.end(), i) !=
                           p.stages[i - 1].consumers.end();
    if (joins)
      groups.back().push_back(i);
    else
      groups.push_back({i});
  }
  return groups;
}

}  // namespace flowd::placement
