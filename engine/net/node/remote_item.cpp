#include "net/node/remote_item.hpp"

#include <utility>

#include "flowd/error.hpp"

namespace flowd::net::node {

ClusterItem::ClusterItem(std::shared_ptr<ItemHost> host, ItemLocation where, Lineage lineage)
    : host_(std::move(host)), lineage_(std::move(lineage)), where_(std::move(where)) {}

ClusterItem::~ClusterItem() {
  // A value that was lost for good is nowhere to release.
  if (host_ && where_.failed.empty()) host_->release(where_.holder, where_.id);
}

Item ClusterItem::fetch() const {
  if (!host_) throw Error("item '" + lineage_.key + "': no coordinator to fetch it through");
  std::shared_future<Item> ahead;
  {
    std::lock_guard lock(m_);
    ahead = std::exchange(ahead_, {});
  }
  if (ahead.valid()) {
    try {
      return ahead.get();
    } catch (const std::exception&) {
      // Pulled again below, where a lost holder is waited for or recomputed
      // and a lasting failure is reported as any fetch's.
    }
  }
  return host_->fetch(*this);
}

void ClusterItem::fetch_ahead() const {
  if (!host_) return;
  std::lock_guard lock(m_);
  if (!ahead_.valid()) ahead_ = host_->fetch_ahead(*this);
}

std::string ClusterItem::holder() const {
  std::lock_guard lock(m_);
  return where_.holder_name;
}

ItemLocation ClusterItem::location() const {
  std::lock_guard lock(m_);
  return where_;
}

void ClusterItem::relocate(ItemLocation where) const {
  std::lock_guard lock(m_);
  where_ = std::move(where);
}

void ClusterItem::fail(std::string why) const {
  std::lock_guard lock(m_);
  where_.failed = std::move(why);
}

}  // namespace flowd::net::node
