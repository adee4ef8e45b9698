#include "net/membership/membership.hpp"

namespace flowd::net::membership {

std::string_view to_string(MemberEventKind k) noexcept {
  switch (k) {
    case MemberEventKind::joined: return "joined";
    case MemberEventKind::left: return "left";
    case MemberEventKind::lost: return "lost";
  }
  return "?";
}

std::string_view to_string(CoordinatorEventKind k) noexcept {
  switch (k) {
    case CoordinatorEventKind::left: return "left";
    case CoordinatorEventKind::lost: return "lost";
  }
  return "?";
}

}  // namespace flowd::net::membership
