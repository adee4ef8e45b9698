#include "sched/pats_queue.hpp"

#include <cmath>
#include <stdexcept>

namespace flowd::sched {

void PatsQueue::push(TaskPtr task) {
  const KindMask m = task->runs_on;
  if (m == 0 || m >= mask_count) throw std::logic_error("PatsQueue: task with no runnable worker kind");
  float s = task->est.speedup;
  if (!std::isfinite(s) || s <= 0) s = 1.0f;
  const Key key{s, next_seq_++};
  if (task->data_worker >= 0) local_[task->data_worker].emplace(key, m);
  buckets_[m].emplace(key, std::move(task));
  ++size_;
}

PatsQueue::Bucket::iterator PatsQueue::best(Bucket& b, bool gpu) {
  if (!gpu) return b.begin();
  const float top = std::prev(b.end())->first.speedup;
  return b.lower_bound(Key{top, 0});
}

TaskPtr PatsQueue::take(KindMask mask, Bucket::iterator it) {
  TaskPtr t = std::move(it->second);
  if (t->data_worker >= 0) {
    auto l = local_.find(t->data_worker);
    l->second.erase(it->first);
    if (l->second.empty()) local_.erase(l);
  }
  buckets_[mask].erase(it);
  --size_;
  return t;
}

void PatsQueue::set_free(const WorkerInfo& worker, bool free) noexcept {
  free_[static_cast<int>(worker.kind)] += free ? 1 : -1;
}

TaskPtr PatsQueue::pop(const WorkerInfo& worker) {
  const KindMask me = bit(worker.kind);
  const bool gpu = is_gpu_like(worker.kind);
  KindMask free_gpus = 0;
  if (!gpu && opts_.free_gpu_first)
    for (const auto k : {WorkerKind::gpu, WorkerKind::sim_gpu})
      if (free_[static_cast<int>(k)] > 0) free_gpus |= bit(k);
  int best_mask = -1;
  Bucket::iterator chosen;
  for (int m = 1; m < mask_count; ++m) {
    if (!(m & me) || buckets_[m].empty()) continue;
    auto it = best(buckets_[m], gpu);
    if ((m & free_gpus) && it->first.speedup > 1.0f) continue;  // a free GPU will take it
    const bool better = best_mask < 0 || (gpu ? (it->first.speedup > chosen->first.speedup ||
                                                 (it->first.speedup == chosen->first.speedup && it->first.seq < chosen->first.seq))
                                              : it->first < chosen->first);
    if (better) best_mask = m, chosen = it;
  }
  if (best_mask < 0) return nullptr;

  if (gpu && opts_.locality) {
    if (auto l = local_.find(worker.id); l != local_.end()) {
      // The local task with the largest speedup this worker can run.
      for (auto it = l->second.rbegin(); it != l->second.rend(); ++it) {
        if (!(it->second & me)) continue;
        const double sq = chosen->first.speedup, sd = it->first.speedup;
        if (sd >= sq * (1.0 - opts_.transfer_impact)) return take(it->second, buckets_[it->second].find(it->first));
        break;
      }
    }
  }
  return take(static_cast<KindMask>(best_mask), chosen);
}

bool PatsQueue::has_work_for(const WorkerInfo& worker) const noexcept {
  for (int m = 1; m < mask_count; ++m)
    if ((m & bit(worker.kind)) && !buckets_[m].empty()) return true;
  return false;
}

}  // namespace flowd::sched
