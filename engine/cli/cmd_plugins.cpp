// flowd plugins / flowd inspect: what the plugin path provides, in the
// spirit of gst-inspect.
#include <iostream>
#include <map>
#include <set>

#include <boost/program_options.hpp>

#include "cli/columns.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/setup.hpp"
#include "sched/scan_strategy.hpp"
#include "util/text.hpp"

namespace po = boost::program_options;

namespace flowd::cli {

namespace {

std::string variants(const OperatorSpec& s) {
  std::vector<std::string> v;
  for (Device d : s.variants) v.emplace_back(name_of(d));
  return join(v, ",");
}

// The first sentence (or line) of a doc string, for one-line listings.
std::string summary(const std::string& s) {
  std::size_t end = s.find('\n');
  for (std::size_t i = 0; i + 1 < s.size() && i < end; ++i)
    if (s[i] == '.' && s[i + 1] == ' ') {
      end = i;
      break;
    }
  std::string out = s.substr(0, end);
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

struct ListOptions {
  PluginOptions plugins;
  bool json = false;
  bool quiet = false, verbose = false;
  std::string name;

  // `usual`: what the command says without either flag.
  LogLevel level(LogLevel usual) const {
    return quiet ? LogLevel::error : verbose ? LogLevel::debug : json ? LogLevel::error : usual;
  }
};

// The common options of flowd --help (--quiet, --verbose) as every command
// takes them (issue 38: `flowd plugins -q` was refused).
void add_options(po::options_description& d, ListOptions& o) {
  d.add_options()
      ("plugin-path,P", po::value(&o.plugins.plugin_path)->composing(), "directory or .so to search first; repeatable")
      ("no-plugin-cache", po::bool_switch(&o.plugins.no_cache), "re-read every manifest")
      ("json", po::bool_switch(&o.json), "machine-readable output")
      ("quiet,q", po::bool_switch(&o.quiet), "only errors (no warnings about refused plugins)")
      ("verbose,v", po::bool_switch(&o.verbose), "debug messages too (where each plugin was found, the manifest cache)")
      ("help,h", "show this help");
}

void print_operator(const OperatorSpec& s, const plugin::PluginRecord& r) {
  std::cout << "Operator      " << s.name << "\n"
            << "Plugin        " << r.name << " " << r.version << " (" << r.path.string() << ")\n"
            << "Pattern       " << name_of(s.pattern) << "\n"
            << "Variants      " << variants(s) << "\n";
  if (s.pattern == Pattern::scan)
    std::cout << "Strategies    " << sched::scan_strategy_names() << " (the stage's \"strategy\"; default auto)\n";
  if (s.speedup_hint) std::cout << "Speedup hint  " << *s.speedup_hint << "x (GPU over one CPU core)\n";
  std::cout << "\n" << s.doc << "\n";
  Columns table;
  auto ports = [&](const std::vector<PortSpec>& ps) {
    for (const auto& p : ps) table.row({p.name, p.type.str(), p.optional ? "optional" : "", p.doc});
  };
  auto section = [&](const char* title, bool empty) {
    std::cout << "\n" << title << "\n" << table.str("  ") << (empty ? "  (none)\n" : "");
    table = Columns();
  };
  ports(s.inputs);
  section("Inputs", s.inputs.empty());
  ports(s.outputs);
  section("Outputs", s.outputs.empty());
  for (const auto& p : s.params) {
    table.row({p.name, p.expectation(), p.default_value ? "default " + p.default_value->dump() : "required"});
    if (!p.description.empty()) table.note(1, p.description);
  }
  section("Parameters", s.params.empty());
}

}  // namespace

int cmd_plugins(const Args& args) {
  ListOptions o;
  po::options_description desc("Options");
  add_options(desc, o);
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd plugins [options]", "name", vm)) return *rc;
  Logger log = Logger::to_stderr(o.level(LogLevel::warning));
  try {
    auto reg = make_registry(o.plugins, log);
    // What each usable record's operators are hidden by, if anything.
    std::map<std::pair<std::size_t, std::string>, std::size_t> hidden;
    for (const auto& h : reg.shadowed()) hidden[{h.record, h.op}] = h.by;
    const auto& records = reg.plugins();
    if (o.json) {
      Json out = {{"search_path", Json::array()}, {"plugins", Json::array()}};
      for (const auto& d : reg.search_path()) out["search_path"].push_back({{"path", d.path.string()}, {"origin", d.origin}});
      for (std::size_t i = 0; i < records.size(); ++i) {
        const auto& r = records[i];
        Json p = {{"file", r.path.string()}, {"refused", r.refused}};
        if (r.refused) p["refusal"] = r.refusal;
        if (r.manifest.is_object()) p["manifest"] = r.manifest;
        for (const auto& s : r.operators)
          if (auto h = hidden.find({i, s.name}); h != hidden.end())
            p["shadowed"].push_back({{"operator", s.name}, {"by", records[h->second].path.string()}});
        out["plugins"].push_back(std::move(p));
      }
      std::cout << out.dump(2) << "\n";
      return exit_ok;
    }
    std::cout << "Plugin search path:\n";
    for (const auto& d : reg.search_path()) std::cout << "  " << d.path.string() << "  (" << d.origin << ")\n";
    std::size_t ops = 0;
    for (std::size_t i = 0; i < records.size(); ++i) {
      const auto& r = records[i];
      if (r.refused) continue;
      std::cout << "\n" << r.name << " " << r.version << "  " << r.doc << "\n  " << r.path.string() << "\n";
      // A whole file hidden by one other (an installed copy of a plugin
      // given with -P) is said once; otherwise per operator.
      std::set<std::size_t> by;
      std::size_t shadowed = 0;
      for (const auto& s : r.operators)
        if (auto h = hidden.find({i, s.name}); h != hidden.end()) by.insert(h->second), ++shadowed;
      const bool whole = !r.operators.empty() && shadowed == r.operators.size() && by.size() == 1;
      if (whole)
        std::cout << "  every operator shadowed by " << records[*by.begin()].path.string()
                  << " (earlier on the search path)\n";
      Columns table;
      for (const auto& s : r.operators) {
        table.row({s.name, std::string(name_of(s.pattern)), variants(s), summary(s.doc)});
        if (auto h = hidden.find({i, s.name}); h == hidden.end())
          ++ops;
        else if (!whole)
          table.note(1, "shadowed by " + records[h->second].path.string() + " (earlier on the search path)");
      }
      std::cout << table.str("    ");
    }
    std::size_t usable = 0;
    for (const auto& r : reg.plugins()) usable += !r.refused;
    std::cout << "\n" << ops << (ops == 1 ? " operator" : " operators") << " in " << usable
              << (usable == 1 ? " plugin" : " plugins") << "\n";
    bool any_refused = false;
    for (const auto& r : reg.plugins())
      if (r.refused) {
        if (!any_refused) std::cout << "\nRefused:\n";
        any_refused = true;
        std::cout << "  " << r.path.string() << ": " << r.refusal << "\n";
      }
    return exit_ok;
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_invalid;
  }
}

int cmd_inspect(const Args& args) {
  ListOptions o;
  po::options_description desc("Options");
  desc.add_options()("name", po::value(&o.name)->required(), "operator or plugin name");
  add_options(desc, o);
  po::variables_map vm;
  if (auto rc = parse_command(args, desc, "usage: flowd inspect OPERATOR|PLUGIN [options]", "name", vm)) return *rc;
  Logger log = Logger::to_stderr(o.level(LogLevel::error));
  try {
    auto reg = make_registry(o.plugins, log);
    if (const OperatorSpec* s = reg.find(o.name)) {
      if (o.json) std::cout << to_json(*s).dump(2) << "\n";
      else print_operator(*s, *reg.provider(o.name));
      return exit_ok;
    }
    for (const auto& r : reg.plugins()) {
      if (r.refused || r.name != o.name) continue;
      if (o.json) {
        std::cout << r.manifest.dump(2) << "\n";
        return exit_ok;
      }
      std::cout << "Plugin        " << r.name << " " << r.version << "\nFile          " << r.path.string()
                << "\nSDK           " << r.manifest.value("sdk_version", "?") << " (ABI " << r.abi << ")\n\n"
                << r.doc << "\n\nOperators\n";
      Columns table;
      for (const auto& s : r.operators) table.row({s.name, summary(s.doc)});
      std::cout << table.str("  ");
      return exit_ok;
    }
    std::cerr << "flowd: " << reg.explain(o.name) << "\n";
    return exit_invalid;
  } catch (const std::exception& e) {
    log.error(e.what());
    return exit_invalid;
  }
}

}  // namespace flowd::cli
