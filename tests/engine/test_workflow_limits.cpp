// Hostile workflow documents: nesting that used to overflow the stack or take
// gigabytes, variables by the ten thousand, variables that expand each other.
// Each must end in a clear problem at a JSON pointer (or the --set it came
// from), never in a crash. Time is measured by flowd-bench-workflow, not here.
#include <gtest/gtest.h>

#include "support/helpers.hpp"
#include "workflow/diagnostics.hpp"
#include "workflow/json_reader.hpp"
#include "workflow/substitute.hpp"

using namespace flowd;
using workflow::Diagnostic;

namespace {

std::vector<Diagnostic> read_problems(const std::string& json, const std::vector<workflow::Override>& sets = {}) {
  try {
    return workflow::parse_workflow(json, "test.json", sets).problems;
  } catch (const workflow::ValidationError& e) {
    return e.diagnostics();
  }
}

std::string all(const std::vector<Diagnostic>& ds) {
  std::string s;
  for (const auto& d : ds)
    s += "\n  " + d.where + ": " + d.message;
  return s;
}

std::string nested(std::size_t n) { return std::string(n, '[') + std::string(n, ']'); }

std::string with_param(const std::string& value) {
  return R"({"version": 1, "stages": {"src": {"op": "test.count", "params": {"deep": )" + value + "}}}}";
}

}  // namespace

TEST(WorkflowLimits, DeepNestingInAParameterIsRefusedAtItsPointer) {
  // 15 000 levels overflowed the substituter's stack; 100 000 took 30 s and
  // 9.8 GB. Both are refused at the limit, before any recursion.
  for (const std::size_t depth : {15'000u, 100'000u}) {
    const auto ds = read_problems(with_param(nested(depth)));
    ASSERT_EQ(ds.size(), 1u) << all(ds);
    EXPECT_EQ(ds[0].where.rfind("/stages/src/params/deep/0/0/0/0/...(", 0), 0u) << ds[0].where;
    EXPECT_NE(ds[0].message.find("nested deeper than 256 levels"), std::string::npos) << ds[0].message;
    // The document, "stages", "src", "params", then arrays from column 74:
    // the 253rd array opens the 257th level.
    EXPECT_NE(ds[0].message.find("(test.json:1:326)"), std::string::npos) << ds[0].message;
  }
}

TEST(WorkflowLimits, NestingUpToTheLimitIsRead) {
  // Four levels above the value: 252 arrays reach the limit exactly.
  const auto w = workflow::parse_workflow(with_param(nested(workflow::max_nesting_depth - 4)), "test.json");
  EXPECT_TRUE(w.problems.empty()) << all(w.problems);
  EXPECT_TRUE(w.stages.at(0).params.at("deep").is_array());
  EXPECT_EQ(read_problems(with_param(nested(workflow::max_nesting_depth - 3))).size(), 1u);
}

TEST(WorkflowLimits, DeepNestingInAVariableIsRefused) {
  const auto ds = read_problems(R"({"version": 1, "vars": {"v": )" + nested(15'000) +
                                R"(}, "stages": {"src": {"op": "test.count", "params": {"count": "${v}"}}}})");
  ASSERT_EQ(ds.size(), 1u) << all(ds);
  EXPECT_EQ(ds[0].where.rfind("/vars/v/0/0/0/0/0/0/...(", 0), 0u) << ds[0].where;
}

TEST(WorkflowLimits, DeepNestingInASetValueNamesTheSet) {
  const std::string doc = R"({"version": 1, "vars": {"v": 1}, "stages": {"src": {"op": "test.count"}}})";
  for (const auto& target : {std::string("v"), std::string("src.deep")}) {
    const auto ds = read_problems(doc, {{target, nested(15'000)}});
    ASSERT_EQ(ds.size(), 1u) << all(ds);
    EXPECT_EQ(ds[0].where.rfind("--set " + target + "=[[[[", 0), 0u) << ds[0].where;
    EXPECT_NE(ds[0].where.find("(30000 bytes)"), std::string::npos) << "the value is cut short: " << ds[0].where;
    EXPECT_NE(ds[0].message.find("nested deeper than"), std::string::npos) << ds[0].message;
  }
  // Shallow JSON and plain text still work as before.
  const auto ok = workflow::parse_workflow(doc, "test.json", {{"src.deep", "[[1]]"}, {"src.name", "plain text"}});
  EXPECT_TRUE(ok.problems.empty()) << all(ok.problems);
  EXPECT_EQ(ok.stages.at(0).params.at("deep"), Json::parse("[[1]]"));
  EXPECT_EQ(ok.stages.at(0).params.at("name"), "plain text");
}

TEST(WorkflowLimits, FiftyThousandVariablesAreRead) {
  std::string vars, uses;
  for (int i = 0; i < 50'000; ++i) {
    vars += (i ? ", \"v" : "\"v") + std::to_string(i) + "\": " + std::to_string(i);
    uses += "${v" + std::to_string(i) + "}";
  }
  const auto w = workflow::parse_workflow(R"({"version": 1, "vars": {)" + vars +
                                              R"(}, "stages": {"src": {"op": "test.count", "params": {"all": ")" +
                                              uses + R"("}}}})",
                                          "test.json");
  EXPECT_TRUE(w.problems.empty()) << all(w.problems);
  EXPECT_EQ(w.vars.size(), 50'000u);
  EXPECT_EQ(w.vars.at("v49999"), 49'999);
  const auto& all_of_them = w.stages.at(0).params.at("all").get_ref<const std::string&>();
  EXPECT_EQ(all_of_them.substr(0, 6), "012345");
  EXPECT_EQ(all_of_them.substr(all_of_them.size() - 5), "49999");
  // Document order is kept for the provenance hash.
  EXPECT_EQ(w.resolved.at("vars").begin().key(), "v0");
}

TEST(WorkflowLimits, ALongChainOfVariablesIsRefusedNotOverflowed) {
  // v0 -> v1 -> ... each resolved inside the previous one.
  std::string vars;
  for (int i = 0; i < 20'000; ++i)
    vars += "\"v" + std::to_string(i) + "\": \"${v" + std::to_string(i + 1) + "}\", ";
  vars += "\"v20000\": 1";
  const auto ds =
      read_problems(R"({"version": 1, "vars": {)" + vars + R"(}, "stages": {"src": {"op": "test.count"}}})");
  ASSERT_FALSE(ds.empty());
  EXPECT_NE(all(ds).find("variables refer to each other through more than 256 levels"), std::string::npos) << all(ds);
}

TEST(WorkflowLimits, VariablesThatExpandEachOtherAreStopped) {
  // Each variable doubles the previous: 2^40 bytes if nothing stopped it.
  std::string vars = "\"a0\": \"xxxxxxxxxxxxxxxx\"";
  for (int i = 1; i <= 40; ++i)
    vars += ", \"a" + std::to_string(i) + "\": \"${a" + std::to_string(i - 1) + "}${a" + std::to_string(i - 1) + "}\"";
  const auto ds =
      read_problems(R"({"version": 1, "vars": {)" + vars + R"(}, "stages": {"src": {"op": "test.count"}}})");
  ASSERT_FALSE(ds.empty());
  EXPECT_NE(all(ds).find("more than 64 MiB of text"), std::string::npos) << all(ds);
}

TEST(WorkflowLimits, DuplicateKeysAreReportedAtTheirPointerWhateverTheDepth) {
  const auto ds = read_problems(
      R"({"version": 1, "stages": {"src": {"op": "test.count", "params": {"p": [{"a": 1, "a~/b": 2, "a~/b": 3}]}}}})");
  ASSERT_EQ(ds.size(), 1u) << all(ds);
  EXPECT_EQ(ds[0].where, "/stages/src/params/p/0/a~0~1b");
  // The last value wins, at the first one's place.
  const auto w = workflow::parse_workflow(
      R"({"version": 1, "stages": {"s": {"op": "x", "params": {"a": 1, "b": 2, "a": 3}}}})", "test.json");
  EXPECT_EQ(w.resolved["stages"]["s"]["params"].dump(), R"({"a":3,"b":2})");
}

TEST(WorkflowLimits, ShortenedPointers) {
  EXPECT_EQ(workflow::shorten_pointer("/a/b", 8), "/a/b");
  EXPECT_EQ(workflow::shorten_pointer("/a/b/c/d", 2), "/a/b/...(2 more levels)");
  EXPECT_EQ(workflow::line_column("ab\ncd", 4), "2:2");
}
