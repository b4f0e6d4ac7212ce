-- Wireshark dissector for the A-SPAN testbed: the UDP overlay (routing/overlay/wire.py, versions 2 and 3) and the
-- A-SPAN IPv4 option of the kernel data plane (routing/kernel/ip_option.py).
--
-- Install (one step): copy this file into Wireshark's personal Lua plugins folder,
--   mkdir -p ~/.local/lib/wireshark/plugins && cp routing/wireshark/aspan.lua ~/.local/lib/wireshark/plugins/
-- or load it for one command: tshark -X lua_script:routing/wireshark/aspan.lua -r B.pcapng
--
-- The overlay is found on UDP port 42405 (the port the testbed's captures use, routing/drivers/capture.py),
-- and heuristically on any UDP port (magic 0xA5, version 2 or 3, a length that adds up).  Version 2
-- ends in a CRC-32 (zlib's, over everything before it), checked: aspan.crc_ok.  Version 3 (the
-- authenticated overlay) ends in the sender's sequence number and a 16-byte keyed MAC, shown but not
-- checked (that needs the run's key).  pkt_effort and pkt_qos are 16-bit fixed point (k / 65535);
-- both the word and the value are shown.
--
-- The IPv4 option (type 94 by default, the netns backend's netns.option; the preference
-- "aspan_opt.type" sets another) is decoded by a postdissector: Wireshark's IP dissector shows it as
-- an unknown option and offers no table to hook, so the fields appear under "A-SPAN IPv4 option".

local FIXED_ONE = 65535
local OVERLAY_PORT = 42405
local HEADER_LEN = 23
local DATA_FIXED = 17      -- seq u32, ack u32, flags u8, nsack u8, nsnack u8, window u32, paylen u16
local PROBE_LEN = 8        -- seq u32, ratio f32

-- ---- CRC-32 (IEEE 802.3, as zlib.crc32) -----------------------------------------------------------
local crc_table = {}
for i = 0, 255 do
  local c = i
  for _ = 1, 8 do
    if bit32.band(c, 1) == 1 then c = bit32.bxor(0xEDB88320, bit32.rshift(c, 1)) else c = bit32.rshift(c, 1) end
  end
  crc_table[i] = c
end

local function crc32(tvbrange)
  local bytes = tvbrange:bytes()
  local c = 0xFFFFFFFF
  for i = 0, bytes:len() - 1 do
    c = bit32.bxor(crc_table[bit32.band(bit32.bxor(c, bytes:get_index(i)), 0xFF)], bit32.rshift(c, 8))
  end
  return bit32.bxor(c, 0xFFFFFFFF)
end

-- ---- the overlay -------------------------------------------------------------------------------------
local aspan = Proto("aspan", "A-SPAN overlay")
local types = { [1] = "DATA", [2] = "PROBE" }
local tcp_flags = { [0x01] = "FIN", [0x02] = "SYN", [0x04] = "RST", [0x10] = "ACK" }

local f = {
  magic = ProtoField.uint8("aspan.magic", "Magic", base.HEX),
  version = ProtoField.uint8("aspan.version", "Version"),
  type = ProtoField.uint8("aspan.type", "Type", base.DEC, types),
  src = ProtoField.ipv4("aspan.src", "Source"),
  sport = ProtoField.uint16("aspan.sport", "Source port"),
  dst = ProtoField.ipv4("aspan.dst", "Destination"),
  dport = ProtoField.uint16("aspan.dport", "Destination port"),
  -- The header's hops byte counts this packet's transmissions so far, this one included (the
  -- sender's first send carries 1); the node logs `hop` (docs/LOGS.md, `tx`): the transmissions
  -- before this one (0 for that send).  aspan.hop is that value, so filters and the log agree.
  hops = ProtoField.uint8("aspan.hops", "Hops byte (transmissions so far, this one included)"),
  hop = ProtoField.uint8("aspan.hop", "Hop (transmissions before this one: the log's hop)"),
  snoop_after = ProtoField.uint8("aspan.snoop_after", "snoop_after"),
  snoop_limit = ProtoField.uint8("aspan.snoop_limit", "snoop_limit"),
  snoop_count = ProtoField.uint8("aspan.snoop_count", "snoop_count"),
  effort_word = ProtoField.uint16("aspan.pkt_effort_word", "pkt_effort (16-bit word)"),
  effort = ProtoField.double("aspan.pkt_effort", "pkt_effort"),
  qos_word = ProtoField.uint16("aspan.pkt_qos_word", "pkt_qos (16-bit word)"),
  qos = ProtoField.double("aspan.pkt_qos", "pkt_qos"),
  seq = ProtoField.uint32("aspan.seq", "TCP sequence number"),
  ack = ProtoField.uint32("aspan.ack", "TCP acknowledgment number"),
  flags = ProtoField.uint8("aspan.flags", "TCP flags", base.HEX),
  nsack = ProtoField.uint8("aspan.nsack", "SACK blocks"),
  nsnack = ProtoField.uint8("aspan.nsnack", "SNACK entries"),
  window = ProtoField.uint32("aspan.window", "Window (bytes)"),
  len = ProtoField.uint16("aspan.len", "Payload length"),
  sack_left = ProtoField.uint32("aspan.sack_left", "SACK left edge"),
  sack_right = ProtoField.uint32("aspan.sack_right", "SACK right edge (exclusive)"),
  snack = ProtoField.uint32("aspan.snack", "SNACK: lost sequence number"),
  payload = ProtoField.bytes("aspan.payload", "Payload"),
  probe_seq = ProtoField.uint32("aspan.probe_seq", "Probe sequence number"),
  probe_ratio = ProtoField.float("aspan.probe_ratio", "Probe: sender's measured ratio (-1 unknown)"),
  crc = ProtoField.uint32("aspan.crc", "CRC-32", base.HEX),
  crc_ok = ProtoField.bool("aspan.crc_ok", "CRC-32 correct"),
  auth_seq = ProtoField.uint64("aspan.auth_seq", "Sender's sequence number (version 3)"),
  tag = ProtoField.bytes("aspan.tag", "Keyed MAC (version 3, BLAKE2b-128, not checked here)"),
}
aspan.fields = f
local ef_bad_crc = ProtoExpert.new("aspan.crc_bad", "CRC-32 mismatch: the datagram is malformed",
                                   expert.group.CHECKSUM, expert.severity.ERROR)
local ef_bad_len = ProtoExpert.new("aspan.len_bad", "Length fields disagree with the datagram size",
                                   expert.group.MALFORMED, expert.severity.ERROR)
aspan.experts = { ef_bad_crc, ef_bad_len }

local function flag_names(v)
  local out = {}
  for bit, name in pairs(tcp_flags) do
    if bit32.band(v, bit) ~= 0 then out[#out + 1] = name end
  end
  table.sort(out)
  return table.concat(out, ",")
end

local TRAILER = { [2] = 4, [3] = 24 }   -- version -> trailer bytes: CRC-32, or seq u64 + 16-byte MAC

local function looks_like_overlay(tvb)
  local n = tvb:len()
  if n < HEADER_LEN + 4 or tvb(0, 1):uint() ~= 0xA5 then return false end
  local trailer = TRAILER[tvb(1, 1):uint()]
  return trailer ~= nil and n >= HEADER_LEN + trailer and (tvb(2, 1):uint() == 1 or tvb(2, 1):uint() == 2)
end

function aspan.dissector(tvb, pinfo, tree)
  if not looks_like_overlay(tvb) then return 0 end
  local n = tvb:len()
  pinfo.cols.protocol = "A-SPAN"
  local t = tree:add(aspan, tvb(), "A-SPAN overlay")
  t:add(f.magic, tvb(0, 1))
  t:add(f.version, tvb(1, 1))
  local ptype = tvb(2, 1):uint()
  t:add(f.type, tvb(2, 1))
  t:add(f.src, tvb(3, 4))
  t:add(f.sport, tvb(7, 2))
  t:add(f.dst, tvb(9, 4))
  t:add(f.dport, tvb(13, 2))
  t:add(f.hops, tvb(15, 1))
  local hops = tvb(15, 1):uint()
  if hops > 0 then t:add(f.hop, tvb(15, 1), hops - 1):set_generated() end
  t:add(f.snoop_after, tvb(16, 1))
  t:add(f.snoop_limit, tvb(17, 1))
  t:add(f.snoop_count, tvb(18, 1))
  local ew, qw = tvb(19, 2):uint(), tvb(21, 2):uint()
  t:add(f.effort_word, tvb(19, 2))
  t:add(f.effort, tvb(19, 2), ew / FIXED_ONE)
  t:add(f.qos_word, tvb(21, 2))
  t:add(f.qos, tvb(21, 2), qw / FIXED_ONE)
  local version = tvb(1, 1):uint()
  local body_end = n - TRAILER[version]
  local info
  if ptype == 1 and body_end >= HEADER_LEN + DATA_FIXED then
    local o = HEADER_LEN
    local seq, ack = tvb(o, 4):uint(), tvb(o + 4, 4):uint()
    local flags, nsack, nsnack = tvb(o + 8, 1):uint(), tvb(o + 9, 1):uint(), tvb(o + 10, 1):uint()
    local paylen = tvb(o + 15, 2):uint()
    t:add(f.seq, tvb(o, 4))
    t:add(f.ack, tvb(o + 4, 4))
    t:add(f.flags, tvb(o + 8, 1)):append_text(" (" .. flag_names(flags) .. ")")
    t:add(f.nsack, tvb(o + 9, 1))
    t:add(f.nsnack, tvb(o + 10, 1))
    t:add(f.window, tvb(o + 11, 4))
    t:add(f.len, tvb(o + 15, 2))
    o = o + DATA_FIXED
    if o + 8 * nsack + 4 * nsnack + paylen ~= body_end then
      t:add_proto_expert_info(ef_bad_len)
    else
      for _ = 1, nsack do
        t:add(f.sack_left, tvb(o, 4))
        t:add(f.sack_right, tvb(o + 4, 4))
        o = o + 8
      end
      for _ = 1, nsnack do
        t:add(f.snack, tvb(o, 4))
        o = o + 4
      end
      if paylen > 0 then t:add(f.payload, tvb(o, paylen)) end
    end
    info = string.format("DATA %s:%d > %s:%d seq=%d ack=%d len=%d [%s] hop=%d effort=%.6f qos=%.6f",
                         tostring(tvb(3, 4):ipv4()), tvb(7, 2):uint(), tostring(tvb(9, 4):ipv4()), tvb(13, 2):uint(),
                         seq, ack, paylen, flag_names(flags), tvb(15, 1):uint() - 1, ew / FIXED_ONE, qw / FIXED_ONE)
  elseif ptype == 2 and body_end == HEADER_LEN + PROBE_LEN then
    t:add(f.probe_seq, tvb(HEADER_LEN, 4))
    t:add(f.probe_ratio, tvb(HEADER_LEN + 4, 4))
    info = string.format("PROBE seq=%d ratio=%.4f", tvb(HEADER_LEN, 4):uint(), tvb(HEADER_LEN + 4, 4):float())
  else
    t:add_proto_expert_info(ef_bad_len)
    info = "malformed"
  end
  if version == 3 then
    t:add(f.auth_seq, tvb(body_end, 8))
    t:add(f.tag, tvb(body_end + 8, 16))
    info = info .. " [authenticated]"
  else
    local crc = tvb(body_end, 4):uint()
    t:add(f.crc, tvb(body_end, 4))
    local ok = crc32(tvb(0, body_end)) == crc
    t:add(f.crc_ok, tvb(body_end, 4), ok)
    if not ok then
      t:add_proto_expert_info(ef_bad_crc)
      info = info .. " [CRC mismatch]"
    end
  end
  pinfo.cols.info = info
  return n
end

DissectorTable.get("udp.port"):add(OVERLAY_PORT, aspan)
aspan:register_heuristic("udp", function(tvb, pinfo, tree)
  if not looks_like_overlay(tvb) then return false end
  aspan.dissector(tvb, pinfo, tree)
  return true
end)

-- ---- the A-SPAN IPv4 option (kernel data plane) ---------------------------------------------------------
local opt = Proto("aspan_opt", "A-SPAN IPv4 option")
local g = {
  type = ProtoField.uint8("aspan_opt.type", "Option type"),
  effort_word = ProtoField.uint16("aspan_opt.pkt_effort_word", "pkt_effort (16-bit word)"),
  effort = ProtoField.double("aspan_opt.pkt_effort", "pkt_effort"),
  qos_word = ProtoField.uint16("aspan_opt.pkt_qos_word", "pkt_qos (16-bit word)"),
  qos = ProtoField.double("aspan_opt.pkt_qos", "pkt_qos"),
  hops = ProtoField.uint8("aspan_opt.hops", "Hops (transmissions before this one)"),
  snoop_count = ProtoField.uint8("aspan_opt.snoop_count", "snoop_count"),
  snoop_after = ProtoField.uint8("aspan_opt.snoop_after", "snoop_after"),
  snoop_limit = ProtoField.uint8("aspan_opt.snoop_limit", "snoop_limit"),
}
opt.fields = g
opt.prefs.type = Pref.uint("Option type", 94, "IPv4 option type of the A-SPAN fields (netns.option: 30, 94, 158, 222)")

local ip_src = Field.new("ip.src")
local ip_hdr_len = Field.new("ip.hdr_len")

function opt.dissector(tvb, pinfo, tree)
  local srcs, lens = { ip_src() }, { ip_hdr_len() }
  for i, src in ipairs(srcs) do
    local start = src.offset - 12              -- the IPv4 header starts 12 bytes before the source address
    local ihl = lens[i] and lens[i].value or 20
    local o = start + 20
    while o + 1 < start + ihl do
      local kind = tvb(o, 1):uint()
      if kind == 0 then break end
      if kind == 1 then
        o = o + 1
      else
        local n = tvb(o + 1, 1):uint()
        if n < 2 then break end
        if kind == opt.prefs.type and n == 8 then
          local t = tree:add(opt, tvb(o, 8), "A-SPAN IPv4 option")
          local ew, qw, hc, al = tvb(o + 2, 2):uint(), tvb(o + 4, 2):uint(), tvb(o + 6, 1):uint(), tvb(o + 7, 1):uint()
          t:add(g.type, tvb(o, 1))
          t:add(g.effort_word, tvb(o + 2, 2))
          t:add(g.effort, tvb(o + 2, 2), ew / FIXED_ONE)
          t:add(g.qos_word, tvb(o + 4, 2))
          t:add(g.qos, tvb(o + 4, 2), qw / FIXED_ONE)
          t:add(g.hops, tvb(o + 6, 1), bit32.rshift(hc, 4))
          t:add(g.snoop_count, tvb(o + 6, 1), bit32.band(hc, 15))
          t:add(g.snoop_after, tvb(o + 7, 1), bit32.rshift(al, 4))
          t:add(g.snoop_limit, tvb(o + 7, 1), bit32.band(al, 15))
        end
        o = o + n
      end
    end
  end
end

register_postdissector(opt)
