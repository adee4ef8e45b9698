// Reading a workflow: parse + variable substitution (workflow::parse_workflow)
// on generated documents, in three ladders, so that the growth with the input
// can be read off: each step doubles the input, so a linear reader doubles its
// time and a quadratic one quadruples it.
//
//   depth: one parameter holding N nested arrays ([[[...]]]); beyond the
//          nesting limit the document is refused, and refusing must stay cheap
//   size:  one parameter holding an array of N strings, each "${v}"
//   vars:  N variables, each used once by a parameter's string
//
//   flowd-bench-workflow [--ladder depth|size|vars] [--from N] [--to N] [--repeat R]
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "workflow/workflow.hpp"

using namespace flowd;

namespace {

std::string stage_with(const std::string& params) {
  return R"(, "stages": {"src": {"op": "x.y", "params": {)" + params + "}}}}";
}

std::string depth_doc(std::size_t n) {
  return R"({"version": 1)" + stage_with(R"("deep": )" + std::string(n, '[') + std::string(n, ']'));
}

std::string size_doc(std::size_t n) {
  std::string items;
  items.reserve(n * 8);
  for (std::size_t i = 0; i < n; ++i)
    items += i ? R"(,"${v}")" : R"("${v}")";
  return R"({"version": 1, "vars": {"v": "x"})" + stage_with(R"("list": [)" + items + "]");
}

std::string vars_doc(std::size_t n) {
  std::string vars, uses;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string name = "v" + std::to_string(i);
    vars += (i ? ", \"" : "\"") + name + "\": " + std::to_string(i);
    uses += "${" + name + "}";
  }
  return R"({"version": 1, "vars": {)" + vars + "}" + stage_with(R"("all": ")" + uses + "\"");
}

}  // namespace

int main(int argc, char** argv) {
  std::string ladder = "all";
  std::size_t from = 0, to = 0;
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--ladder"))
      ladder = argv[i + 1];
    else if (!std::strcmp(argv[i], "--from"))
      from = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--to"))
      to = std::stoul(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeat"))
      repeat = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: flowd-bench-workflow [--ladder depth|size|vars] [--from N] [--to N] [--repeat R]\n");
      return 1;
    }
  }
  struct Ladder {
    const char* name;
    std::string (*make)(std::size_t);
    std::size_t from, to;
  };
  const std::vector<Ladder> ladders = {
      {"depth", depth_doc, 1000, 128000}, {"size", size_doc, 12500, 800000}, {"vars", vars_doc, 3125, 200000}};
  std::printf("%-6s %9s %11s %10s %10s  %s\n", "ladder", "N", "bytes", "median_s", "per_N_us", "outcome");
  for (const auto& l : ladders) {
    if (ladder != "all" && ladder != l.name) continue;
    for (std::size_t n = from ? from : l.from; n <= (to ? to : l.to); n *= 2) {
      const std::string doc = l.make(n);
      std::vector<double> times;
      std::string outcome;
      for (int r = 0; r < repeat; ++r) {
        const auto t = bench::measure([&] {
          try {
            const auto w = workflow::parse_workflow(doc, "bench.json");
            outcome = w.problems.empty() ? "read" : w.problems.front().where + ": " + w.problems.front().message;
          } catch (const std::exception& e) {
            outcome = e.what();
          }
        });
        times.push_back(t.wall);
      }
      if (outcome.size() > 70) outcome = outcome.substr(0, 67) + "...";
      for (auto& c : outcome)
        if (c == '\n') c = ' ';
      const double med = bench::median(times);
      std::printf("%-6s %9zu %11zu %10.4f %10.3f  %s\n", l.name, n, doc.size(), med, 1e6 * med / double(n),
                  outcome.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
