// The archive disk spool (see spool.hpp): append with fsync, validate on open, replay in order.
#include "data/spool.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/log.hpp"

namespace sdn::data {
namespace {

constexpr char kMagic[8] = {'S', 'D', 'N', 'S', 'P', 'L', '0', '1'};
constexpr std::size_t kEntryHeader = 8;
// No batch comes near this; a larger length read from the file is damage, not an allocation.
constexpr uint32_t kMaxPayload = 256u << 20;

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;  // Castagnoli
    t[i] = c;
  }
  return t;
}
constexpr auto kCrcTable = make_crc_table();

std::string sys_error(std::string_view what, const std::string& path) {
  return fmt::format("spool: {} {}: {}", what, path, std::strerror(errno));
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_str(std::string& out, std::string_view s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}
uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Bounds-checked cursor over a payload: every read says whether the bytes were there.
class Reader {
 public:
  explicit Reader(std::string_view d) : d_(d) {}
  bool u32(uint32_t& v) { return take(4, [&](const char* p) { v = static_cast<uint32_t>(get_le(p, 4)); }); }
  bool u64(uint64_t& v) { return take(8, [&](const char* p) { v = get_le(p, 8); }); }
  bool u8(uint8_t& v) { return take(1, [&](const char* p) { v = static_cast<uint8_t>(*p); }); }
  bool str(std::string& s) {
    uint32_t n;
    if (!u32(n) || n > d_.size() - pos_) return false;
    s.assign(d_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool at_end() const { return pos_ == d_.size(); }
  std::size_t left() const { return d_.size() - pos_; }

 private:
  template <class F>
  bool take(std::size_t n, F f) {
    if (d_.size() - pos_ < n) return false;
    f(d_.data() + pos_);
    pos_ += n;
    return true;
  }
  std::string_view d_;
  std::size_t pos_ = 0;
};

bool pread_all(int fd, char* buf, std::size_t n, uint64_t off) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    buf += r;
    n -= static_cast<std::size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return true;
}

bool pwrite_all(int fd, const char* buf, std::size_t n, uint64_t off) {
  while (n > 0) {
    const ssize_t r = ::pwrite(fd, buf, n, static_cast<off_t>(off));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = ENOSPC;
      return false;
    }
    buf += r;
    n -= static_cast<std::size_t>(r);
    off += static_cast<uint64_t>(r);
  }
  return true;
}

// Decodes one payload; false if it is not a well-formed batch.
bool decode_payload(std::string_view payload, std::vector<RecordPtr>& out) {
  Reader rd(payload);
  uint32_t count;
  if (!rd.u32(count)) return false;
  // Each record takes at least 4*4 + 8 + 8 + 1 bytes: a count the payload cannot hold is damage.
  if (count > rd.left() / 33) return false;
  out.clear();
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    auto r = std::make_shared<Record>();
    uint64_t ts, seq;
    uint8_t kind;
    std::string value;
    if (!rd.str(r->key) || !rd.str(r->app_id) || !rd.str(r->instance) || !rd.u64(ts) ||
        !rd.u64(seq) || !rd.u8(kind) || !rd.str(value)) {
      return false;
    }
    r->ts_ns = static_cast<int64_t>(ts);
    r->seq = seq;
    if (kind == 1) {
      r->value = Bytes{std::move(value)};
    } else if (kind == 0) {
      Json j = Json::parse(value, nullptr, false);
      if (j.is_discarded()) return false;
      r->value = std::move(j);
    } else {
      return false;
    }
    out.push_back(std::move(r));
  }
  return rd.at_end();
}

}  // namespace

uint32_t crc32c(std::string_view data, uint32_t crc) {
  crc = ~crc;
  for (unsigned char ch : data) crc = kCrcTable[(crc ^ ch) & 0xff] ^ (crc >> 8);
  return ~crc;
}

Spool::Spool(int fd, std::string path, uint64_t max_bytes)
    : fd_(fd), path_(std::move(path)), max_bytes_(max_bytes) {}

Spool::~Spool() {
  if (fd_ < 0) return;
  // An empty spool leaves no file behind (removed while we still hold the lock; see open()).
  const bool empty = entries_.empty();
  if (empty) ::unlink(path_.c_str());
  ::close(fd_);  // releases the flock
  // And no directory we may have created for it (fails harmlessly when something else is there).
  if (empty) ::rmdir(std::filesystem::path(path_).parent_path().c_str());
}

Expected<std::unique_ptr<Spool>, std::string> Spool::open(const std::string& dir,
                                                          const std::string& name,
                                                          uint64_t max_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return unexpected("spool: cannot create directory " + dir + ": " + ec.message());
  int retries_same_slot = 0;
  for (std::size_t slot = 0; slot < kMaxSlots; ++slot) {
    const std::string path =
        dir + "/" + name + (slot == 0 ? "" : "." + std::to_string(slot)) + ".spool";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return unexpected(sys_error("cannot open", path));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) continue;  // another process owns this slot
      errno = err;
      return unexpected(sys_error("cannot lock", path));
    }
    // The owner may have removed an empty spool between our open and our lock: then we hold a
    // lock on a file no longer at `path`; try the slot again.
    struct stat a {}, b {};
    if (::fstat(fd, &a) != 0 || ::stat(path.c_str(), &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev) {
      ::close(fd);
      if (++retries_same_slot > 100) return unexpected("spool: " + path + " keeps changing under us");
      --slot;
      continue;
    }
    std::unique_ptr<Spool> s(new Spool(fd, path, std::max<uint64_t>(max_bytes, kHeaderSize)));
    if (auto r = s->load(); !r) return unexpected(r.error());
    return s;
  }
  return unexpected(fmt::format("spool: all {} slots of {}/{} are in use by other processes",
                                kMaxSlots, dir, name));
}

Expected<void, std::string> Spool::load() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return unexpected(sys_error("cannot stat", path_));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  char hdr[kHeaderSize];
  uint64_t cursor = kHeaderSize;
  if (size < kHeaderSize || !pread_all(fd_, hdr, kHeaderSize, 0) ||
      std::memcmp(hdr, kMagic, sizeof kMagic) != 0) {
    if (size > 0) {
      // Not a spool (or a header torn before the first entry went in): nothing to trust.
      cut_tail(0, "bad header");
    }
    if (::ftruncate(fd_, 0) != 0) return unexpected(sys_error("cannot truncate", path_));
    std::string h(kMagic, sizeof kMagic);
    put_u64(h, kHeaderSize);
    put_u32(h, crc32c(h.substr(8, 8)));
    put_u32(h, 0);
    if (!pwrite_all(fd_, h.data(), h.size(), 0) || ::fdatasync(fd_) != 0) {
      return unexpected(sys_error("cannot write header of", path_));
    }
    end_ = kHeaderSize;
    return {};
  }
  cursor = get_le(hdr + 8, 8);
  if (crc32c(std::string_view(hdr + 8, 8)) != static_cast<uint32_t>(get_le(hdr + 16, 4)) ||
      cursor < kHeaderSize || cursor > size) {
    // A torn cursor write: replay from the first entry (repeats, never loses).
    spdlog::warn("archive spool {}: replay cursor damaged; replaying from the start", path_);
    cursor = kHeaderSize;
  }
  // Walk every entry; the first one that does not check out ends the good prefix.
  uint64_t off = kHeaderSize;
  std::string payload;
  std::vector<RecordPtr> batch;
  while (off < size) {
    char eh[kEntryHeader];
    const char* why = nullptr;
    uint32_t len = 0;
    if (size - off < kEntryHeader || !pread_all(fd_, eh, kEntryHeader, off)) {
      why = "truncated entry header";
    } else {
      len = static_cast<uint32_t>(get_le(eh, 4));
      if (len > kMaxPayload || len > size - off - kEntryHeader) {
        why = "entry length past the end of the file";
      } else {
        payload.resize(len);
        if (!pread_all(fd_, payload.data(), len, off + kEntryHeader)) {
          why = "read error";
        } else if (crc32c(payload) != static_cast<uint32_t>(get_le(eh + 4, 4))) {
          why = "checksum mismatch";
        } else if (!decode_payload(payload, batch)) {
          why = "malformed batch";
        }
      }
    }
    if (why) {
      cut_tail(off, why);
      break;
    }
    if (off >= cursor) {
      entries_.push_back(Entry{off, len, static_cast<uint32_t>(batch.size())});
      stats_.pending_records += batch.size();
      stats_.pending_bytes += kEntryHeader + len;
    }
    off += kEntryHeader + len;
  }
  end_ = off;
  if (entries_.empty() && end_ > kHeaderSize) {
    // Everything was replayed before the last run ended: start afresh.
    if (::ftruncate(fd_, kHeaderSize) != 0) return unexpected(sys_error("cannot truncate", path_));
    end_ = kHeaderSize;
    if (auto r = write_cursor(kHeaderSize); !r) return r;
  }
  if (!entries_.empty()) {
    spdlog::warn("archive spool {}: {} records in {} batches left by an earlier run; replaying",
                 path_, stats_.pending_records, entries_.size());
  }
  return {};
}

void Spool::cut_tail(uint64_t from, std::string_view why) {
  struct stat st {};
  const uint64_t size = ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : from;
  const uint64_t n = size > from ? size - from : 0;
  ++stats_.corrupt;
  stats_.corrupt_bytes += n;
  // Keep the damaged bytes for whoever investigates; best effort.
  const std::string aside = path_ + ".corrupt";
  const int out = ::open(aside.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out >= 0) {
    std::string buf(64 * 1024, '\0');
    for (uint64_t off = from; off < size;) {
      const std::size_t k = static_cast<std::size_t>(std::min<uint64_t>(buf.size(), size - off));
      if (!pread_all(fd_, buf.data(), k, off) || ::write(out, buf.data(), k) != static_cast<ssize_t>(k)) break;
      off += k;
    }
    ::close(out);
  }
  if (::ftruncate(fd_, static_cast<off_t>(from)) != 0 || ::fdatasync(fd_) != 0) {
    spdlog::error("archive spool {}: cannot cut the damaged tail: {}", path_, std::strerror(errno));
  }
  spdlog::error("archive spool {}: damaged entry at offset {} ({}); {} bytes cut off and kept in {}",
                path_, from, why, n, aside);
}

Expected<void, std::string> Spool::write_cursor(uint64_t cursor) {
  std::string c;
  put_u64(c, cursor);
  put_u32(c, crc32c(c));
  if (!pwrite_all(fd_, c.data(), c.size(), 8) || ::fdatasync(fd_) != 0) {
    return unexpected(sys_error("cannot write the replay cursor of", path_));
  }
  return {};
}

Expected<void, std::string> Spool::append(const std::vector<RecordPtr>& batch) {
  std::string buf;
  buf.resize(kEntryHeader);  // length and checksum, filled below
  put_u32(buf, static_cast<uint32_t>(batch.size()));
  std::string json;
  for (const auto& r : batch) {
    put_str(buf, r->key);
    put_str(buf, r->app_id);
    put_str(buf, r->instance);
    put_u64(buf, static_cast<uint64_t>(r->ts_ns));
    put_u64(buf, r->seq);
    if (r->value.is_bytes()) {
      buf.push_back(1);
      put_str(buf, r->value.bytes());
    } else {
      buf.push_back(0);
      json = r->value.json().dump(-1, ' ', false, Json::error_handler_t::replace);
      put_str(buf, json);
    }
  }
  const std::size_t len = buf.size() - kEntryHeader;
  if (len > kMaxPayload) return unexpected(std::string("spool: batch too large for one entry"));
  if (end_ + buf.size() > max_bytes_) {
    return unexpected(fmt::format("spool: {} is full ({} of max {} bytes)", path_, end_, max_bytes_));
  }
  std::string head;
  put_u32(head, static_cast<uint32_t>(len));
  put_u32(head, crc32c(std::string_view(buf).substr(kEntryHeader)));
  buf.replace(0, kEntryHeader, head);
  if (!pwrite_all(fd_, buf.data(), buf.size(), end_) || ::fdatasync(fd_) != 0) {
    const std::string e = sys_error("cannot append to", path_);
    // Leave no partial entry behind (a later append would follow it).
    if (::ftruncate(fd_, static_cast<off_t>(end_)) != 0) {
      spdlog::error("archive spool {}: cannot cut a failed append: {}", path_, std::strerror(errno));
    }
    return unexpected(e);
  }
  entries_.push_back(Entry{end_, static_cast<uint32_t>(len), static_cast<uint32_t>(batch.size())});
  end_ += buf.size();
  stats_.appended_records += batch.size();
  ++stats_.appended_batches;
  stats_.pending_records += batch.size();
  stats_.pending_bytes += buf.size();
  return {};
}

Expected<std::vector<RecordPtr>, std::string> Spool::front(std::size_t max_records,
                                                         std::size_t& entries) {
  entries = 0;
  if (entries_.empty()) return unexpected(std::string("spool: empty"));
  std::vector<RecordPtr> out, one;
  std::string payload;
  for (const Entry& e : entries_) {
    if (entries > 0 && out.size() + e.records > max_records) break;
    payload.assign(e.size, '\0');
    char eh[kEntryHeader];
    if (pread_all(fd_, eh, kEntryHeader, e.offset) && get_le(eh, 4) == e.size &&
        pread_all(fd_, payload.data(), e.size, e.offset + kEntryHeader) &&
        crc32c(payload) == static_cast<uint32_t>(get_le(eh + 4, 4)) && decode_payload(payload, one)) {
      out.insert(out.end(), std::make_move_iterator(one.begin()), std::make_move_iterator(one.end()));
      ++entries;
      continue;
    }
    if (entries > 0) break;  // replay the good ones first; this one fails on the next call
    // Damaged since it was written: what follows cannot be trusted either.
    uint64_t lost = 0;
    for (const auto& x : entries_) lost += x.records;
    cut_tail(e.offset, "entry unreadable at replay");
    entries_.clear();
    end_ = e.offset;
    stats_.pending_records = 0;
    stats_.pending_bytes = 0;
    return unexpected(fmt::format("spool: entry at offset {} of {} unreadable at replay; {} "
                                  "records cut off (kept in {}.corrupt)", e.offset, path_, lost,
                                  path_));
  }
  return out;
}

Expected<void, std::string> Spool::pop(std::size_t n) {
  for (std::size_t i = 0; i < n && !entries_.empty(); ++i) {
    const Entry e = entries_.front();
    entries_.pop_front();
    stats_.replayed_records += e.records;
    stats_.pending_records -= e.records;
    stats_.pending_bytes -= kEntryHeader + e.size;
  }
  if (entries_.empty()) {
    // Drained: cut the file back to its header, then reset the cursor.
    if (::ftruncate(fd_, kHeaderSize) != 0) return unexpected(sys_error("cannot truncate", path_));
    end_ = kHeaderSize;
    return write_cursor(kHeaderSize);
  }
  return write_cursor(entries_.front().offset);
}

SpoolStats Spool::stats() const { return stats_; }

}  // namespace sdn::data
