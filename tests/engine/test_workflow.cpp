// Workflow documents: syntax, structure, variables, overrides and validation
// against the operators. Every problem is reported at its JSON pointer.
#include <gtest/gtest.h>

#include "support/helpers.hpp"
#include "workflow/diagnostics.hpp"

using namespace flowd;
using workflow::Diagnostic;

namespace {

// The problems validation finds (empty when the workflow is valid).
std::vector<Diagnostic> problems(const std::string& json, std::vector<workflow::Override> sets = {}) {
  try {
    test::graph(json, std::move(sets));
    return {};
  } catch (const workflow::ValidationError& e) {
    return e.diagnostics();
  }
}

::testing::AssertionResult reports(const std::vector<Diagnostic>& ds, const std::string& where, const std::string& text) {
  for (const auto& d : ds)
    if (d.where == where && d.message.find(text) != std::string::npos) return ::testing::AssertionSuccess();
  std::string all;
  for (const auto& d : ds) all += "\n  " + d.where + ": " + d.message;
  return ::testing::AssertionFailure() << "no problem at " << where << " containing \"" << text << "\"; got:" << all;
}

const char* valid = R"({
  "version": 1,
  "vars": {"n": 4, "out": "unused"},
  "stages": {
    "src":  {"op": "test.count", "params": {"count": "${n}"}},
    "step": {"op": "test.step", "inputs": {"in": "src.out"}, "params": {"sleep_ms": 0}},
    "sink": {"op": "test.record", "inputs": {"in": "step.out"}, "params": {"path": "${out}/x.txt"}}
  }
})";

}  // namespace

TEST(Workflow, AValidWorkflowBuildsATopologicalGraph) {
  auto g = test::graph(valid);
  ASSERT_EQ(g.stages.size(), 3u);
  EXPECT_EQ(g.stages[0].name, "src");
  EXPECT_EQ(g.stages[2].name, "sink");
  EXPECT_EQ(g.stages[0].params.get<int>("count"), 4);  // "${n}" keeps the variable's type
  EXPECT_EQ(g.stages[2].params.get<std::string>("path"), "unused/x.txt");
  EXPECT_EQ(g.stages[1].params.get<int>("copies"), 1);  // default filled in
  ASSERT_TRUE(g.stages[1].inputs[0]);
  EXPECT_EQ(g.stages[1].inputs[0]->stage, 0u);
}

TEST(Workflow, SyntaxErrorsGiveLineAndColumn) {
  const auto ds = problems("{\n  \"version\": 1,\n  \"stages\": {\n    \"a\": {\"op\": \"test.count\",}\n  }\n}");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].where, "test.json:4:30");  // the "}" after the trailing comma
  EXPECT_NE(ds[0].message.find("invalid JSON"), std::string::npos) << ds[0].message;
}

TEST(Workflow, DuplicateKeysAreReported) {
  const auto ds = problems(R"({"version": 1, "stages": {"a": {"op": "test.count"}, "a": {"op": "test.count"}}})");
  EXPECT_TRUE(reports(ds, "/stages/a", "duplicate key 'a'"));
}

TEST(Workflow, StructureProblemsAreAllReportedTogether) {
  const auto ds = problems(R"({
    "verison": 1,
    "stages": {
      "bad.name": {"op": "test.count"},
      "s": {"op": 3, "parms": {}},
      "t": {"op": "test.step", "inputs": {"in": 5}}
    },
    "run": {"cpu": -1, "keep_going": "yes", "sched": "x"}
  })");
  EXPECT_TRUE(reports(ds, "/verison", "unknown field 'verison' (did you mean 'version'?)"));
  EXPECT_TRUE(reports(ds, "/version", "missing"));
  EXPECT_TRUE(reports(ds, "/stages/bad.name", "no dots"));
  EXPECT_TRUE(reports(ds, "/stages/s/op", "expected an operator name, got an integer"));
  EXPECT_TRUE(reports(ds, "/stages/s/parms", "did you mean 'params'?"));
  EXPECT_TRUE(reports(ds, "/stages/t/inputs/in", "expected \"stage.port\""));
  EXPECT_TRUE(reports(ds, "/run/cpu", "expected a worker count >= 0"));
  EXPECT_TRUE(reports(ds, "/run/keep_going", "expected true or false"));
  EXPECT_TRUE(reports(ds, "/run/sched", "did you mean 'scheduler'?"));
  EXPECT_GE(ds.size(), 9u);
}

TEST(Workflow, UnsupportedVersion) {
  EXPECT_TRUE(reports(problems(R"({"version": 2, "stages": {"a": {"op": "test.count"}}})"), "/version",
                      "format version 2 is not supported"));
}

TEST(Workflow, VariablesSubstituteTypedEmbeddedAndEscaped) {
  auto g = test::graph(R"({
    "version": 1,
    "vars": {"dir": "out", "name": "${dir}/run", "n": 3},
    "stages": {
      "src": {"op": "test.count", "params": {"count": "${n}", "prefix": "$${literal}-${n}"}},
      "sink": {"op": "test.record", "inputs": {"in": "src.out"}, "params": {"path": "${name}/${n}.txt"}}
    }
  })");
  EXPECT_EQ(g.stages[0].params.get<std::string>("prefix"), "${literal}-3");
  EXPECT_EQ(g.stages[1].params.get<std::string>("path"), "out/run/3.txt");
  EXPECT_EQ(g.workflow.vars.at("name"), "out/run");
}

// A list variable (cvtree's k) is a whole value; inside a string it is an
// error at the string's pointer, and lists of lists are refused.
TEST(Workflow, ListVariablesAreWholeValuesOnly) {
  const auto ds = problems(R"({
    "version": 1, "vars": {"ks": [5, 6], "deep": [5, [6]]},
    "stages": {"src": {"op": "test.count", "params": {"prefix": "k${ks}"}}}
  })");
  EXPECT_TRUE(reports(ds, "/stages/src/params/prefix", "variable 'ks' is a list: it can only be a whole value"));
  EXPECT_TRUE(reports(ds, "/vars/deep", "expected a string, number, boolean or a list of them, got an array"));
}

TEST(Workflow, UndefinedAndCyclicVariables) {
  const auto ds = problems(R"({
    "version": 1, "vars": {"a": "${b}", "b": "${a}", "dir": "x"},
    "stages": {"src": {"op": "test.count", "params": {"prefix": "${dri}/p", "count": "${nope"}}}
  })");
  EXPECT_TRUE(reports(ds, "/stages/src/params/prefix", "undefined variable 'dri' (did you mean 'dir'?)"));
  EXPECT_TRUE(reports(ds, "/stages/src/params/count", "unterminated '${'"));
  EXPECT_TRUE(reports(ds, "/vars/a", "refers to itself"));
}

TEST(Workflow, SetOverridesVariablesAndParameters) {
  auto g = test::graph(valid, {{"n", "7"}, {"out", "elsewhere"}, {"step.sleep_ms", "2"}, {"src.prefix", "k"}});
  EXPECT_EQ(g.stages[0].params.get<int>("count"), 7);
  EXPECT_EQ(g.stages[0].params.get<std::string>("prefix"), "k");
  EXPECT_EQ(g.stages[1].params.get<int>("sleep_ms"), 2);
  EXPECT_EQ(g.stages[2].params.get<std::string>("path"), "elsewhere/x.txt");

  const auto ds = problems(valid, {{"nn", "1"}, {"stpe.sleep_ms", "1"}, {"step.sleep", "1"}, {"step.sleep_ms", "-5"}});
  EXPECT_TRUE(reports(ds, "--set nn=1", "no variable 'nn' (did you mean 'n'?)"));
  EXPECT_TRUE(reports(ds, "--set stpe.sleep_ms=1", "no stage 'stpe' (did you mean 'step'?)"));
  EXPECT_TRUE(reports(ds, "/stages/step/params/sleep", "no parameter 'sleep' (did you mean 'sleep_ms'?)"));
  EXPECT_TRUE(reports(ds, "/stages/step/params/sleep_ms", "expected int >= 0, got -5"));
}

TEST(Workflow, OperatorPortAndTypeProblems) {
  const auto ds = problems(R"({
    "version": 1,
    "stages": {
      "src":   {"op": "test.count"},
      "a":     {"op": "test.stepp", "inputs": {"in": "src.out"}},
      "b":     {"op": "test.step", "inputs": {"input": "src.out"}},
      "c":     {"op": "test.step", "inputs": {"in": "src.output"}},
      "d":     {"op": "test.step", "inputs": {"in": "nowhere.out"}},
      "liar":  {"op": "test.liar", "inputs": {"in": "src.out"}},
      "pair":  {"op": "test.pair", "inputs": {"a": "liar.out", "b": "src.out"}},
      "blur":  {"op": "image.gaussian", "inputs": {"image": "pair.out"}}
    }
  })");
  EXPECT_TRUE(reports(ds, "/stages/a/op", "unknown operator 'test.stepp' (did you mean 'test.step'?)"));
  EXPECT_TRUE(reports(ds, "/stages/b/inputs/input", "no input port 'input' (did you mean 'in'?)"));
  EXPECT_TRUE(reports(ds, "/stages/b/inputs", "required input 'in' (any) of test.step is not connected"));
  EXPECT_TRUE(reports(ds, "/stages/c/inputs/in", "has no output port 'output' (did you mean 'out'?)"));
  EXPECT_TRUE(reports(ds, "/stages/d/inputs/in", "no stage 'nowhere'"));
  EXPECT_TRUE(reports(ds, "/stages/pair/inputs/a", "type mismatch: liar.out produces array<u8,2> but input 'a' of test.pair expects json"));
  EXPECT_TRUE(reports(ds, "/stages/blur/inputs/image", "type mismatch: pair.out produces json"));
}

TEST(Workflow, Cycles) {
  const auto ds = problems(R"({
    "version": 1,
    "stages": {
      "src": {"op": "test.count"},
      "a":   {"op": "test.pair", "inputs": {"a": "src.out", "b": "b.out"}},
      "b":   {"op": "test.step", "inputs": {"in": "a.out"}}
    }
  })");
  ASSERT_FALSE(ds.empty());
  bool found = false;
  for (const auto& d : ds) found |= d.message.find("cycle:") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST(Workflow, ParameterTypeRangeAndRequired) {
  const auto ds = problems(R"({
    "version": 1,
    "stages": {
      "src":  {"op": "test.count", "params": {"count": "ten", "bytes": -1, "reverse": 1}},
      "blur": {"op": "image.gaussian", "inputs": {"image": "src.out"}, "params": {"sigma": 500}},
      "sink": {"op": "test.record", "inputs": {"in": "src.out"}}
    }
  })");
  EXPECT_TRUE(reports(ds, "/stages/src/params/count", "expected int >= 0, got \"ten\""));
  EXPECT_TRUE(reports(ds, "/stages/src/params/bytes", "expected int >= 0, got -1"));
  EXPECT_TRUE(reports(ds, "/stages/src/params/reverse", "expected bool, got 1"));
  EXPECT_TRUE(reports(ds, "/stages/blur/params/sigma", "expected float in [0.1, 100], got 500"));
  EXPECT_TRUE(reports(ds, "/stages/sink/params", "missing required parameter 'path'"));
}

TEST(Workflow, AnOperatorsOwnParameterCheckIsReportedAtItsPointer) {
  const auto ds = problems(R"({"version": 1, "stages": {"src": {"op": "test.count", "params": {"count": 3, "fail_at": 5}}}})");
  EXPECT_TRUE(reports(ds, "/stages/src/params/fail_at", "fail_at must be below count (3)"));
}

TEST(Workflow, ANonSourceOnlyGraphIsRejected) {
  const auto ds = problems(R"({"version": 1, "stages": {"a": {"op": "test.step", "inputs": {"in": "a.out"}}}})");
  ASSERT_FALSE(ds.empty());
}

TEST(Workflow, ValidationErrorListsEveryProblemInWhat) {
  try {
    test::graph(R"({"version": 1, "stages": {"a": {"op": "nope.x"}, "b": {"op": "nope.y"}}})");
    FAIL();
  } catch (const workflow::ValidationError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("2 problems in test.json"), std::string::npos) << what;
    EXPECT_NE(what.find("/stages/a/op: unknown operator 'nope.x'"), std::string::npos) << what;
    EXPECT_NE(what.find("/stages/b/op: unknown operator 'nope.y'"), std::string::npos) << what;
  }
}
