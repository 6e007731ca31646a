// Run to completion across shards (docs/runtime.md, "Replies across shards"): the shard that
// read a PacketIn puts every FlowMod/PacketOut of its answer on the wire itself, including
// those for switches another shard owns. Measured on 2 vCPUs shared with ovs-vswitchd, a hop to
// the owner's thread (a post, an eventfd wake-up, a context switch) cost more than the whole
// reply; here the calling thread encodes the batch and, when none of the connection's bytes
// are being written, hands it to the kernel with one non-blocking send(2). Only the rare
// leftovers (a full socket buffer, the owner mid-write) wait for the owner's next write.
#include <sys/socket.h>

#include <cerrno>

#include <asio/post.hpp>

#include "southbound/connection.hpp"

namespace sdn::southbound {

void Connection::remote_open() {
  if (transport_.is_tls()) return;  // one SSL object: its writes stay on the owner's thread
  std::lock_guard lk(wmu_);
  fd_ = transport_.tcp().native_handle();
}

void Connection::remote_shut() {
  std::lock_guard lk(wmu_);
  fd_ = -1;
}

void Connection::remote_settle_all() {
  std::map<uint32_t, PendingBatch> gone;
  {
    std::lock_guard lk(wmu_);
    fd_ = -1;
    gone.swap(remote_batches_);
    remote_xids_ = 0;
    remote_tail_.clear();
  }
  BatchResult r;
  r.ok = false;
  r.disconnected = true;
  for (auto& [xid, b] : gone) {
    counters_.batches_failed.inc();
    if (b.done) b.done(r);
  }
}

bool Connection::remote_barrier(uint32_t xid) {
  if ((xid & kRemoteXid) == 0) return false;
  PendingBatch b;
  {
    std::lock_guard lk(wmu_);
    auto it = remote_batches_.find(xid);
    if (it == remote_batches_.end()) return true;  // ours, settled already (or unknown): nothing to do
    b = std::move(it->second);
    remote_xids_ -= b.barrier_xid - b.first_xid + 1;
    remote_batches_.erase(it);
  }
  (b.result.ok ? counters_.batches_ok : counters_.batches_failed).inc();
  if (b.done) b.done(b.result);
  return true;
}

bool Connection::remote_error(uint32_t xid, const ofp::ErrorMsg& e) {
  if ((xid & kRemoteXid) == 0) return false;
  std::lock_guard lk(wmu_);
  // The batch whose range holds xid: the first whose barrier is not below it.
  auto it = remote_batches_.lower_bound(xid);
  if (it != remote_batches_.end() && it->second.first_xid <= xid && it->second.result.ok) {
    it->second.result.ok = false;
    it->second.result.error = e;
    it->second.result.failed_xid = xid;
  }
  return true;
}

Connection::RemoteResult Connection::send_batch_remote(std::vector<ofp::Body>& batch, BatchCallback& done) {
  // xids: top bit set, then a 30-bit counter; a range never wraps into the owner's half.
  const uint32_t n = static_cast<uint32_t>(batch.size()) + 1;
  const uint32_t base = remote_seq_.fetch_add(n, std::memory_order_relaxed) & 0x3fff'ffff;
  const uint32_t first = kRemoteXid | (base + 1);
  const uint32_t barrier = first + n - 1;
  ofp::Bytes buf;
  uint32_t xid = first;
  for (const auto& body : batch) encode_counted(xid++, body, buf);
  encode_counted(barrier, ofp::BarrierRequest{}, buf);

  BatchResult fail;
  fail.ok = false;
  fail.error = ofp::ErrorMsg{ofp::err::kBadRequest, ofp::err::kBrcMultipartBufferOverflow, {}};
  bool post = false;
  {
    std::unique_lock lk(wmu_);
    if (fd_ < 0) return RemoteResult::kNotUp;
    if (remote_xids_ + n > cfg_.max_pending_xids || remote_tail_.size() + buf.size() > cfg_.max_queued_bytes) {
      lk.unlock();
      (remote_xids_ + n > cfg_.max_pending_xids ? counters_.err_pending_xids : counters_.err_queue_overflow).inc();
      counters_.remote_refused.inc();
      if (done) done(fail);
      return RemoteResult::kRefused;
    }
    remote_batches_.emplace(barrier, PendingBatch{first, barrier, std::move(done), BatchResult{}});
    remote_xids_ += n;
    size_t sent = 0;
    if (!wbusy_ && remote_tail_.empty()) {
      const ssize_t w = ::send(fd_, buf.data(), buf.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (w > 0) sent = static_cast<size_t>(w);
      counters_.writes.inc();
    }
    counters_.tx_msgs.inc(n);
    counters_.tx_bytes.inc(buf.size());
    if (sent == buf.size()) {
      counters_.remote_direct.inc();
      return RemoteResult::kSent;
    }
    // The kernel did not take all of it (or the owner is writing): the rest goes first in the
    // owner's next write. A send error other than a full buffer shows on the owner's read side,
    // which closes the connection and settles the batch as disconnected.
    counters_.remote_queued.inc();
    remote_tail_.insert(remote_tail_.end(), buf.begin() + static_cast<std::ptrdiff_t>(sent), buf.end());
    if (!wbusy_ && !remote_flush_posted_) post = remote_flush_posted_ = true;
  }
  if (post)
    asio::post(transport_.get_executor(), [self = shared_from_this()] {
      {
        std::lock_guard lk(self->wmu_);
        self->remote_flush_posted_ = false;
      }
      self->flush();
    });
  return RemoteResult::kSent;
}

}  // namespace sdn::southbound
