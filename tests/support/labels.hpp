#pragma once
// Labels written the way tests read best: a stage's labels from JSON text
// (which must parse) and a node's from its names.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "workflow/labels.hpp"

namespace flowd::test {

inline workflow::StageLabels stage_labels(const char* text) {
  auto p = workflow::parse_stage_labels(nlohmann::json::parse(text), "/stages/0/labels");
  EXPECT_TRUE(p.ok()) << text << ": " << (p.errors.empty() ? "" : p.errors[0].pointer + " " + p.errors[0].message);
  return p.value;
}

inline workflow::NodeLabels node_labels(std::vector<std::string> names, std::int64_t rank = 0) {
  return {std::move(names), rank};
}

}  // namespace flowd::test
