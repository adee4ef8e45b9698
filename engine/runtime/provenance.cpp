#include "runtime/provenance.hpp"

#include <unistd.h>

#include <ctime>

#include "flowd/version.hpp"
#include "util/sha256.hpp"
#include "util/text.hpp"

namespace flowd::runtime {

std::string workflow_hash(const workflow::Workflow& wf) { return Sha256::hex(wf.resolved.dump()); }

Json make_provenance(const workflow::Graph& graph, const std::vector<std::string>& command_line) {
  Json p = Json::object();
  p["flowd_version"] = std::string(version_string);
  p["workflow_sha256"] = workflow_hash(graph.workflow);
  p["workflow"] = Json::parse(graph.workflow.resolved.dump());
  p["workflow_file"] = graph.workflow.file.string();
  Json plugins = Json::object();
  Json stages = Json::object();
  for (const auto& s : graph.stages) {
    const auto& d = s.handle.plugin().descriptor();
    plugins[d.name] = {{"version", d.version}, {"file", s.handle.plugin().path().string()}};
    stages[s.name] = {{"op", s.spec().name}, {"plugin", d.name + " " + d.version}, {"params", s.params.json()}};
  }
  p["plugins"] = std::move(plugins);
  p["stages"] = std::move(stages);
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  p["created"] = ts;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  p["host"] = host;
  p["command"] = join(command_line, " ");
  return p;
}

}  // namespace flowd::runtime
