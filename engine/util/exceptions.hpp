#pragma once
// Naming an exception of any type. Plugin code may throw anything (`throw
// 42`, a string literal, a class of its own); the engine must fail the item
// with a message, never let it escape a worker thread.
#include <string>
#include <string_view>

namespace flowd {

// Inside a catch block only: what the exception being handled says. A
// std::exception gives its what(); anything else carries no message, so it
// is named by its demangled type: "<who> threw a non-standard exception of
// type int".
std::string current_exception_message(std::string_view who);

// Inside a catch block only: the demangled type of the exception being
// handled ("int", "char const*", "(unknown)").
std::string current_exception_type();

}  // namespace flowd
