#pragma once
// Exceptions shared by the engine and plugins. Operators throw them (or any
// std::exception); the engine adds the stage and item key when it reports.
#include <stdexcept>
#include <string>
#include <utility>

namespace flowd {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A parameter value that passed the declared type/range checks but is still
// unusable (e.g. min_area > max_area). Thrown from an operator's constructor;
// the engine reports it at /stages/<stage>/params/<param>.
class ParamError : public Error {
public:
  ParamError(std::string param, const std::string& message)
      : Error(message), param_(std::move(param)) {}
  const std::string& param() const noexcept { return param_; }

private:
  std::string param_;
};

// A failure that belongs to one item, reported under its key. Sources throw
// it: the engine cannot know which item a failed next() was making.
class ItemError : public Error {
public:
  ItemError(std::string key, const std::string& message) : Error(message), key_(std::move(key)) {}
  const std::string& key() const noexcept { return key_; }

private:
  std::string key_;
};

}  // namespace flowd
