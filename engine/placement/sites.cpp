#include "placement/sites.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string_view>
#include <set>

#include "workflow/diagnostics.hpp"
#include "workflow/json_reader.hpp"

namespace flowd::placement {

std::size_t Sites::find(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < sites.size(); ++i)
    if (sites[i].name == name) return i;
  return sites.size();
}

namespace {

using workflow::Diagnostics;

// Reads a number member; problems go to `d` at its pointer.
double number(const Json& obj, const std::string& at, const char* key, double fallback, bool required,
              double lowest, bool lowest_allowed, Diagnostics& d) {
  if (!obj.contains(key)) {
    if (required) d.add(at, std::string("missing \"") + key + "\"");
    return fallback;
  }
  const Json& v = obj.at(key);
  const std::string where = at + "/" + key;
  if (!v.is_number()) {
    d.add(where, "expected a number, got " + v.dump());
    return fallback;
  }
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lowest || (!lowest_allowed && x == lowest)) {
    d.add(where, std::string("must be ") + (lowest_allowed ? "at least " : "greater than ") +
                     (lowest == 0 ? "0" : std::to_string(lowest)) + ", got " + v.dump());
    return fallback;
  }
  return x;
}

// Every member of `obj` not in `known`, as a problem at its pointer.
void unknown_keys(const Json& obj, const std::string& at, std::initializer_list<std::string_view> known,
                  Diagnostics& d) {
  for (const auto& [k, v] : obj.items())
    if (std::find(known.begin(), known.end(), k) == known.end())
      d.add(at + workflow::pointer({k}), "unknown key \"" + k + "\"");
}

void parse_hosts(const Json& hosts, Sites& out, Diagnostics& d) {
  if (!hosts.is_array()) {
    d.add("/hosts", "expected a list of hosts, each {\"name\", \"cores\", \"sites\"}");
    return;
  }
  std::set<std::string> names;
  std::vector<std::string> host_of(out.sites.size());
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const std::string at = "/hosts/" + std::to_string(i);
    const Json& h = hosts[i];
    if (!h.is_object()) {
      d.add(at, "expected an object");
      continue;
    }
    unknown_keys(h, at, {"name", "cores", "sites", "transfer_cpu_ms_per_mb"}, d);
    Host host;
    if (!h.contains("name") || !h["name"].is_string() || h["name"].get<std::string>().empty()) {
      d.add(at + "/name", "expected a non-empty name");
    } else {
      host.name = h["name"].get<std::string>();
      if (!names.insert(host.name).second) d.add(at + "/name", "the host \"" + host.name + "\" is named twice");
    }
    host.cores = number(h, at, "cores", 1.0, true, 0.0, false, d);
    host.transfer_cpu = number(h, at, "transfer_cpu_ms_per_mb", 0.0, false, 0.0, true, d) / 1e3 / 1e6;
    const Json sites = h.value("sites", Json());
    if (!sites.is_array() || sites.empty()) {
      d.add(at + "/sites", "expected a list of the names of the sites on this host");
    } else {
      for (std::size_t k = 0; k < sites.size(); ++k) {
        const std::string sat = at + "/sites/" + std::to_string(k);
        const std::size_t j = sites[k].is_string() ? out.find(sites[k].get<std::string>()) : out.sites.size();
        if (j == out.sites.size()) {
          d.add(sat, "expected the name of one of the sites, got " + sites[k].dump());
        } else if (!host_of[j].empty()) {
          d.add(sat, "the site \"" + out.sites[j].name + "\" is on host \"" + host_of[j] + "\" already");
        } else {
          host_of[j] = host.name.empty() ? "?" : host.name;
          host.sites.push_back(j);
        }
      }
    }
    out.hosts.push_back(std::move(host));
  }
}

}  // namespace

Sites parse_sites(const Json& doc, const std::string& file) {
  Diagnostics d;
  Sites out;
  if (!doc.is_object()) throw workflow::ValidationError(file, {{"", "expected an object with \"sites\" and \"links\""}});
  unknown_keys(doc, "", {"version", "sites", "links", "coordinator", "hosts"}, d);
  if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<std::int64_t>() != 1)
    d.add("/version", "expected 1");
  const Json sites = doc.value("sites", Json());
  if (!sites.is_array() || sites.size() < 2) {
    d.add("/sites", "expected a list of at least two sites (the data site first, the client site last)");
  } else {
    std::set<std::string> names;
    for (std::size_t i = 0; i < sites.size(); ++i) {
      const std::string at = "/sites/" + std::to_string(i);
      const Json& s = sites[i];
      if (!s.is_object()) {
        d.add(at, "expected an object");
        continue;
      }
      unknown_keys(s, at, {"name", "nodes", "speed", "label"}, d);
      Site site;
      if (!s.contains("name") || !s["name"].is_string() || s["name"].get<std::string>().empty()) {
        d.add(at + "/name", "expected a non-empty name");
      } else {
        site.name = s["name"].get<std::string>();
        if (!names.insert(site.name).second) d.add(at + "/name", "the site \"" + site.name + "\" is named twice");
      }
      site.label = "site:" + site.name;
      if (s.contains("label")) {
        if (!s["label"].is_string() || s["label"].get<std::string>().empty())
          d.add(at + "/label", "expected a non-empty node label");
        else
          site.label = s["label"].get<std::string>();
      }
      if (s.contains("nodes") && (!s["nodes"].is_number_integer() || s["nodes"].get<std::int64_t>() < 1 ||
                                  s["nodes"].get<std::int64_t>() > 100000))
        d.add(at + "/nodes", "expected a whole number of nodes from 1 to 100000, got " + s["nodes"].dump());
      else if (s.contains("nodes"))
        site.nodes = s["nodes"].get<int>();
      site.speed = number(s, at, "speed", 1.0, false, 0.0, false, d);
      out.sites.push_back(std::move(site));
    }
  }
  const Json links = doc.value("links", Json());
  const std::size_t want = out.sites.size() > 0 ? out.sites.size() - 1 : 0;
  if (!links.is_array()) {
    d.add("/links", "expected a list of links, one between each two sites next to each other in \"sites\"");
  } else {
    if (!out.sites.empty() && links.size() != want)
      d.add("/links", "expected " + std::to_string(want) + " links (the sites form a chain: one between each two " +
                          "next to each other), got " + std::to_string(links.size()));
    for (std::size_t i = 0; i < links.size(); ++i) {
      const std::string at = "/links/" + std::to_string(i);
      const Json& l = links[i];
      if (!l.is_object()) {
        d.add(at, "expected an object");
        continue;
      }
      unknown_keys(l, at, {"from", "to", "bandwidth_mb_s", "latency_ms", "message_overhead_ms"}, d);
      // The chain's order: link i joins sites i and i + 1.
      for (const auto& [key, expect] : {std::pair{"from", i}, std::pair{"to", i + 1}}) {
        if (!l.contains(key) || !l[key].is_string()) {
          d.add(at + "/" + key, "expected a site's name");
        } else if (expect < out.sites.size() && l[key].get<std::string>() != out.sites[expect].name) {
          d.add(at + "/" + key, "expected \"" + out.sites[expect].name + "\" (link " + std::to_string(i) +
                                    " joins sites " + std::to_string(i) + " and " + std::to_string(i + 1) +
                                    " of the chain), got " + l[key].dump());
        }
      }
      Link link;
      link.bandwidth = number(l, at, "bandwidth_mb_s", 1.0, true, 0.0, false, d) * 1e6;
      link.latency = number(l, at, "latency_ms", 0.0, false, 0.0, true, d) / 1e3;
      link.message_overhead = number(l, at, "message_overhead_ms", 0.0, false, 0.0, true, d) / 1e3;
      out.links.push_back(link);
    }
  }
  out.coordinator = out.sites.empty() ? 0 : out.sites.size() - 1;
  if (doc.contains("coordinator")) {
    const Json& c = doc["coordinator"];
    if (!c.is_string() || out.find(c.get<std::string>()) == out.sites.size())
      d.add("/coordinator", "expected the name of one of the sites, got " + c.dump());
    else
      out.coordinator = out.find(c.get<std::string>());
  }
  if (doc.contains("hosts")) parse_hosts(doc["hosts"], out, d);
  if (!d.empty()) throw workflow::ValidationError(file, d.items());
  return out;
}

Sites load_sites(const std::filesystem::path& file) {
  return parse_sites(workflow::read_json_file(file, "sites file"), file.string());
}

}  // namespace flowd::placement
