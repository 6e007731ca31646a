// The local disk spool of an archive whose database is unreachable (issue 11 item 4): batches of
// records are appended to one file as length-prefixed, CRC-32C checksummed entries, fsync'd one
// by one, and replayed to the database in order when it comes back. A torn or damaged tail (a
// crash mid-append) is found by its checksum when the file is opened, counted, logged, copied
// aside to "<file>.corrupt" and cut off; the good prefix is kept and replayed.
//
// File layout (all integers little endian):
//   header  "SDNSPL01" | u64 replay cursor (offset of the oldest entry not yet replayed) |
//           u32 crc32c(cursor) | u32 0                                           (24 bytes)
//   entry   u32 payload length | u32 crc32c(payload) | payload
//   payload u32 record count, then per record: str key | str app_id | str instance |
//           i64 ts_ns | u64 seq | u8 kind (0 JSON text, 1 bytes) | str value   (str = u32 len)
// The cursor moves (and is fsync'd) after each replayed entry, so a crash during replay repeats
// at most the one entry in flight (at-least-once), never loses one. One process owns a spool
// file at a time (flock); a second process on the same directory takes the next free slot
// ("<name>.1.spool", ...).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.hpp"
#include "data/record.hpp"

namespace sdn::data {

uint32_t crc32c(std::string_view data, uint32_t crc = 0);

struct SpoolStats {
  uint64_t appended_records = 0;  // records written to the spool (this process)
  uint64_t appended_batches = 0;
  uint64_t replayed_records = 0;  // records taken back out after the database committed them
  uint64_t pending_records = 0;   // in the spool now, not yet replayed
  uint64_t pending_bytes = 0;     // bytes of those entries
  uint64_t corrupt = 0;           // damaged entries found (each cut off with what follows it)
  uint64_t corrupt_bytes = 0;     // bytes cut off
};

class Spool {
 public:
  static constexpr std::size_t kHeaderSize = 24;
  static constexpr std::size_t kMaxSlots = 16;

  // Opens (creating `dir` and the file) "<dir>/<name>.spool" or the first free slot, validates
  // every entry and cuts a damaged tail. `max_bytes` caps the file (appends beyond fail).
  static Expected<std::unique_ptr<Spool>, std::string> open(const std::string& dir,
                                                             const std::string& name,
                                                             uint64_t max_bytes);
  ~Spool();
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  const std::string& path() const { return path_; }
  bool has_backlog() const { return !entries_.empty(); }

  // Appends the batch as one entry and fsyncs; on error (ENOSPC, the cap) the file is cut back
  // to where it was and nothing of the batch is in the spool.
  Expected<void, std::string> append(const std::vector<RecordPtr>& batch);
  // The oldest entries not yet replayed, decoded, in order: at least one entry, then more while
  // the total stays within `max_records`; `entries` receives how many. An entry that cannot be
  // read back (changed on disk since open) is counted as corrupt and cut off with everything
  // after it; the error says so.
  Expected<std::vector<RecordPtr>, std::string> front(std::size_t max_records, std::size_t& entries);
  // Marks the `n` front entries replayed (cursor persisted once); the file is truncated when
  // none is left.
  Expected<void, std::string> pop(std::size_t n = 1);

  SpoolStats stats() const;

 private:
  struct Entry {
    uint64_t offset;  // of the entry header
    uint32_t size;    // payload bytes
    uint32_t records;
  };
  Spool(int fd, std::string path, uint64_t max_bytes);
  Expected<void, std::string> load();
  Expected<void, std::string> write_cursor(uint64_t cursor);
  // Copies [from, end_) to "<path>.corrupt", truncates the file at `from`, counts.
  void cut_tail(uint64_t from, std::string_view why);

  int fd_ = -1;
  std::string path_;
  uint64_t max_bytes_;
  uint64_t end_ = kHeaderSize;  // file size (end of the last good entry)
  std::deque<Entry> entries_;   // pending, oldest first
  SpoolStats stats_;
};

}  // namespace sdn::data
