// FakeSwitch: an in-memory OpenFlow 1.3 switch for app tests, on the emulated datapath (emu/).
#include "fakes/fake_switch.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

namespace sdn::test {

FakeSwitch::FakeSwitch(uint64_t dpid, std::vector<uint32_t> ports) {
  features_.datapath_id = dpid;
  features_.n_buffers = 256;
  features_.n_tables = 254;
  for (uint32_t p : ports) {
    ofp::Port port;
    port.port_no = p;
    port.hw_addr = 0x020000000000ULL | ((dpid & 0xffff) << 16) | (p & 0xffff);
    port.name = "s" + std::to_string(dpid) + "-eth" + std::to_string(p);
    ports_.push_back(std::move(port));
  }
}

void FakeSwitch::send(ofp::Body body, southbound::Lane /*lane*/) {
  // Keep our own copy of PacketOut data: the app's span views a buffer that goes away.
  if (auto* po = std::get_if<ofp::PacketOut>(&body)) {
    sent_data_.emplace_back(po->data.begin(), po->data.end());
    po->data = sent_data_.back();
  }
  sent_.push_back(body);
  apply(sent_.back());
}

void FakeSwitch::send_batch(std::vector<ofp::Body> batch, southbound::Lane lane, southbound::BatchCallback done) {
  const size_t errors_before = errors_.size();
  for (auto& b : batch) send(std::move(b), lane);
  southbound::BatchResult r;
  r.ok = errors_.size() == errors_before;
  if (done) done(r);
}

void FakeSwitch::send_request(ofp::Body request, southbound::ReplyCallback on_reply) {
  sent_.push_back(request);
  requests_.push_back(Request{std::move(request), std::move(on_reply)});
}

void FakeSwitch::advance(Clock::duration d) {
  now_ += d;
  std::vector<ofp::FlowRemoved> removed;
  table_.expire(now_, removed);
  note_removed(std::move(removed));
}

void FakeSwitch::note_removed(std::vector<ofp::FlowRemoved> removed) {
  for (auto& fr : removed) {
    removed_.push_back(fr);
    unread_removed_.push_back(std::move(fr));
  }
}

const FlowEntry* FakeSwitch::lookup(pkt::ByteView frame, uint32_t in_port) {
  return table_.lookup(frame, in_port, now_);
}

std::optional<ofp::ActionList> FakeSwitch::lookup_actions(pkt::ByteView frame, uint32_t in_port) {
  const FlowEntry* e = lookup(frame, in_port);
  if (e == nullptr) return std::nullopt;
  return e->actions();
}

bool FakeSwitch::process(pkt::ByteView frame, uint32_t in_port) {
  const FlowEntry* e = lookup(frame, in_port);
  if (e == nullptr) return false;
  // A flow whose only action sends to the controller (CPAM's allow rules): as a miss, the fabric
  // raises the PacketIn.
  if (const auto acts = e->actions(); acts.size() == 1)
    if (const auto* o = std::get_if<ofp::ActionOutput>(&acts[0]); o != nullptr && o->port == ofp::port::kController)
      return false;
  run_actions(e->actions(), frame, in_port);
  return true;
}

ofp::PacketIn FakeSwitch::packet_in(pkt::ByteView frame, uint32_t in_port) {
  ofp::PacketIn pin;
  pin.total_len = static_cast<uint16_t>(frame.size());
  pin.reason = 0;  // OFPR_NO_MATCH
  pin.match.set(ofp::OxmField::kInPort, in_port);
  pin.data = frame;
  if (buffering_) {
    pin.buffer_id = next_buffer_id_++;
    buffers_.push_back(Buffered{pin.buffer_id, in_port, ofp::Bytes(frame.begin(), frame.end())});
  }
  return pin;
}

ofp::PortStatus FakeSwitch::set_link_down(uint32_t port) {
  ofp::PortStatus ps;
  ps.reason = 2;  // OFPPR_MODIFY
  for (auto& p : ports_) {
    if (p.port_no != port) continue;
    p.state |= ofp::kPortStateLinkDown;
    ps.desc = p;
  }
  down_ports_.push_back(port);
  return ps;
}

void FakeSwitch::clear_records() {
  sent_.clear();
  sent_data_.clear();
  outputs_.clear();
  removed_.clear();
  errors_.clear();
}

void FakeSwitch::apply(const ofp::Body& body) {
  if (const auto* fm = std::get_if<ofp::FlowMod>(&body)) {
    apply_flow_mod(*fm);
  } else if (const auto* po = std::get_if<ofp::PacketOut>(&body)) {
    apply_packet_out(*po);
  }
  // Other messages (barriers, stats requests, ...) are only recorded.
}

void FakeSwitch::apply_flow_mod(const ofp::FlowMod& fm) {
  using Cmd = ofp::FlowModCommand;
  std::vector<ofp::FlowRemoved> removed;
  const auto rejected = table_.apply(fm, now_, removed);
  note_removed(std::move(removed));
  if (rejected) {
    errors_.push_back(std::string("flow_mod rejected: ") + rejected->why);
    return;
  }
  if (fm.command == Cmd::kDelete || fm.command == Cmd::kDeleteStrict) return;  // 7.3.4.1: buffer_id ignored
  if (fm.buffer_id != ofp::kNoBuffer) {
    // The buffered packet goes through the pipeline after the insert (7.3.4.1).
    auto b = std::find_if(buffers_.begin(), buffers_.end(), [&](const Buffered& x) { return x.id == fm.buffer_id; });
    if (b == buffers_.end()) {
      errors_.push_back("flow_mod: unknown buffer_id");  // OFPBRC_BUFFER_UNKNOWN
      return;
    }
    Buffered pkt = std::move(*b);
    buffers_.erase(b);
    if (!process(pkt.frame, pkt.in_port)) errors_.push_back("buffered packet missed the table after flow_mod");
  }
}

void FakeSwitch::apply_packet_out(const ofp::PacketOut& po) {
  ofp::Bytes frame;
  if (po.buffer_id != ofp::kNoBuffer) {
    auto b = std::find_if(buffers_.begin(), buffers_.end(), [&](const Buffered& x) { return x.id == po.buffer_id; });
    if (b == buffers_.end()) {
      errors_.push_back("packet_out: unknown buffer_id");
      return;
    }
    frame = std::move(b->frame);
    buffers_.erase(b);
  } else {
    frame.assign(po.data.begin(), po.data.end());
  }
  run_actions(po.actions, frame, po.in_port);
}

void FakeSwitch::run_actions(const ofp::ActionList& actions, pkt::ByteView original, uint32_t in_port) {
  auto emit = [&](uint32_t port, const pkt::Bytes& frame) {
    if (std::find(down_ports_.begin(), down_ports_.end(), port) != down_ports_.end()) return;
    outputs_.push_back(Output{port, frame});
  };
  emu::run_actions(
      actions, original,
      [&](uint32_t out, const pkt::Bytes& frame) {
        switch (out) {
          case ofp::port::kFlood:
          case ofp::port::kAll:
            for (const auto& p : ports_)
              if (p.port_no != in_port) emit(p.port_no, frame);
            break;
          case ofp::port::kInPort:
            emit(in_port, frame);
            break;
          case ofp::port::kTable:
            if (!process(frame, in_port)) errors_.push_back("packet_out to TABLE missed");
            break;
          default:
            if (out == in_port) {
              // A switch never sends a frame back out its ingress port unless told OFPP_IN_PORT.
              errors_.push_back("output to the ingress port dropped");
              break;
            }
            emit(out, frame);
        }
      },
      [&](std::string why) { errors_.push_back(std::move(why)); });
}

}  // namespace sdn::test
