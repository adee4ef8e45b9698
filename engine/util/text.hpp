#pragma once
// Small text helpers for messages.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flowd {

std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word` when it is close enough to be a likely typo.
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);
// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);
std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace flowd
