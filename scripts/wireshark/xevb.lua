-- SPDX-License-Identifier: GPL-2.0-only
--[[
xevb.lua: Wireshark/tshark dissector for the xevb data-plane wire format,
version 1 (docs/wire-format.md, include/xevb/wire.h).

  xevb_mep  fragment packets (MEPs), source -> builder: raw IPv4 protocol
            253 and UDP port 23900 (both changeable in the preferences)
  xevb_evt  built events, builder -> farm node, on a TCP stream (port 5000
            by default, and any TCP stream that starts with "EVNT"); events
            are reassembled across segments

Every field is decoded; each fragment's CRC-32C is checked (preference).
Anything that breaks the format is flagged with expert info (group
Malformed, severity Error) with the rule it breaks, the way the builder
would reject it, so `tshark -Y "_ws.expert.group == malformed"` lists them.

Use:
  tshark -X lua_script:scripts/wireshark/xevb.lua -r cap.pcap -Y xevb_mep -V
  wireshark -X lua_script:scripts/wireshark/xevb.lua cap.pcap
or copy it to ~/.local/lib/wireshark/plugins/.
Filters: xevb_mep.source_id == 3, xevb_mep.frag.event_id == 1000,
xevb_evt.flags.incomplete == 1, xevb_evt.missing == 2, xevb_mep.frag.crc32c_ok == 0.
]]

local bitlib = bit32 or bit

-- CRC-32C (Castagnoli), reflected, as the sources compute it.
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if bitlib.band(c, 1) ~= 0 then
			c = bitlib.bxor(bitlib.rshift(c, 1), 0x82F63B78)
		else
			c = bitlib.rshift(c, 1)
		end
	end
	crc_table[i] = c
end

local function crc32c(bytes)
	local c = 0xFFFFFFFF
	for i = 0, bytes:len() - 1 do
		c = bitlib.bxor(crc_table[bitlib.band(bitlib.bxor(c, bytes:get_index(i)), 0xFF)], bitlib.rshift(c, 8))
	end
	return bitlib.band(bitlib.bxor(c, 0xFFFFFFFF), 0xFFFFFFFF)
end

local function pad4(n) return (n + 3) - (n + 3) % 4 end

-- The fields alike in MEPs and built events (proto: "xevb_mep", "xevb_evt"): of the header, of
-- a fragment record and its payload.
local function add_shared_fields(fields, proto)
	fields.version = ProtoField.uint8(proto .. ".version", "Version")
	fields.flags = ProtoField.uint8(proto .. ".flags", "Flags", base.HEX)
	fields.n_frags = ProtoField.uint16(proto .. ".n_frags", "Fragment records")
	fields.run = ProtoField.uint32(proto .. ".run_number", "Run number")
	fields.frag = ProtoField.none(proto .. ".frag", "Fragment")
	fields.frsv = ProtoField.uint16(proto .. ".frag.reserved", "Reserved", base.HEX)
	fields.crc = ProtoField.uint32(proto .. ".frag.crc32c", "CRC-32C", base.HEX)
	fields.crc_ok = ProtoField.bool(proto .. ".frag.crc32c_ok", "CRC-32C correct")
	fields.payload = ProtoField.bytes(proto .. ".frag.payload", "Payload")
	fields.padding = ProtoField.bytes(proto .. ".frag.padding", "Padding")
	return fields
end

-- The experts both protocols raise: a broken rule, a wrong CRC-32C.
local function format_experts(proto, what)
	return {
		malformed = ProtoExpert.new(proto .. ".malformed", "Malformed " .. what, expert.group.MALFORMED, expert.severity.ERROR),
		crc = ProtoExpert.new(proto .. ".crc_bad", "CRC-32C mismatch", expert.group.CHECKSUM, expert.severity.ERROR),
	}
end

-- A non-empty payload and, when check is on, whether its CRC-32C is the record's.
local function add_payload(ftree, fields, experts, crc_item, pr, crc, check)
	ftree:add(fields.payload, pr)
	if not check then return end
	local c = crc32c(pr:bytes())
	ftree:add(fields.crc_ok, c == crc):set_generated()
	if c ~= crc then
		crc_item:add_proto_expert_info(experts.crc, string.format("CRC-32C 0x%08x, payload gives 0x%08x", crc, c))
	end
end

----------------------------------------------------------------------------
-- MEP
----------------------------------------------------------------------------
local MEP_MAGIC, MEP_HLEN, FRAG_HLEN = 0x4D45, 16, 12
local MAX_SOURCE_ID, MAX_FRAGS = 4095, 1024

local mep = Proto("xevb_mep", "xevb MEP (multi-event fragment packet)")
local mf = add_shared_fields({
	magic = ProtoField.uint16("xevb_mep.magic", "Magic", base.HEX),
	resend = ProtoField.bool("xevb_mep.flags.resend", "RESEND", 8, nil, 0x01),
	eor = ProtoField.bool("xevb_mep.flags.end_of_run", "END_OF_RUN", 8, nil, 0x02),
	segment = ProtoField.bool("xevb_mep.flags.segment", "SEGMENT", 8, nil, 0x04),
	flags_rsv = ProtoField.uint8("xevb_mep.flags.reserved", "Reserved flag bits", base.HEX, nil, 0xF8),
	source_id = ProtoField.uint16("xevb_mep.source_id", "Source ID"),
	seq = ProtoField.uint32("xevb_mep.packet_seq", "Packet sequence"),
	event_id = ProtoField.uint32("xevb_mep.frag.event_id", "Event ID"),
	length = ProtoField.uint16("xevb_mep.frag.length", "Payload length"),
	seg_offset = ProtoField.uint16("xevb_mep.frag.seg_offset", "Segment offset"),
	seg_bytes = ProtoField.uint16("xevb_mep.frag.seg_bytes", "Segment bytes"),
	seg_last = ProtoField.bool("xevb_mep.frag.seg_last", "Last segment"),
	n_decoded = ProtoField.uint16("xevb_mep.frags_decoded", "Fragment records decoded"),
}, "xevb_mep")
mep.fields = mf
local me = format_experts("xevb_mep", "MEP")
me.padding = ProtoExpert.new("xevb_mep.padding_nonzero", "Non-zero padding", expert.group.PROTOCOL, expert.severity.WARN)
mep.experts = { me.malformed, me.crc, me.padding }
mep.prefs.ip_proto = Pref.uint("Raw IPv4 protocol", 253, "IP protocol number of raw MEPs (0: off)")
mep.prefs.udp_port = Pref.uint("UDP port", 23900, "UDP destination port of MEPs (0: off)")
mep.prefs.check_crc = Pref.bool("Check CRC-32C", true, "Compute each fragment's CRC-32C and compare")

-- serial-number order (RFC 1982): a after b
local function seq_after(a, b)
	local d = (a - b) % 4294967296
	return d ~= 0 and d < 2147483648
end

-- A record's padding, flagged when a byte is not zero.
local function add_padding(tree, pr)
	local it = tree:add(mf.padding, pr)
	for i = 0, pr:len() - 1 do
		if pr:bytes():get_index(i) ~= 0 then
			it:add_proto_expert_info(me.padding, "padding bytes must be zero")
			break
		end
	end
end

-- Wire format 1.1: one segment of a fragment larger than a packet. The
-- record's length is the whole fragment's, its crc32c the whole payload's
-- (not checkable from one segment), seg_offset where these bytes start.
local function dissect_segment(tvb, pinfo, t, bad, problems, sid, run, seq, nf, flags)
	local len = tvb:len()
	if nf ~= 1 then bad(t, "SEGMENT with n_frags " .. nf .. ", must be 1") end
	if len - MEP_HLEN < FRAG_HLEN then
		bad(t, string.format("SEGMENT: %d bytes left, record header needs 12", len - MEP_HLEN))
		pinfo.cols.info:set("MEP segment [MALFORMED: " .. table.concat(problems, "; ") .. "]")
		return len
	end
	local off = MEP_HLEN
	local e, flen, so = tvb(off, 4):uint(), tvb(off + 4, 2):uint(), tvb(off + 6, 2):uint()
	local avail = len - MEP_HLEN - FRAG_HLEN
	local last = so + avail >= flen
	local nb = last and math.max(flen - so, 0) or avail
	local bytes = nb > 0 and string.format("bytes %u-%u", so, so + nb - 1) or string.format("no bytes at %u", so)
	local ftree = t:add(mf.frag, tvb(off))
	ftree:set_text(string.format("Segment: event %u, %s of %u", e, bytes, flen))
	ftree:add(mf.event_id, tvb(off, 4))
	local it = ftree:add(mf.length, tvb(off + 4, 2))
	if flen == 0 then bad(it, "SEGMENT with length 0") end
	it = ftree:add(mf.seg_offset, tvb(off + 6, 2))
	if so % 4 ~= 0 then bad(it, "seg_offset " .. so .. " is not a multiple of 4") end
	if flen > 0 and so >= flen then bad(it, string.format("seg_offset %u not below length %u", so, flen)) end
	ftree:add(mf.crc, tvb(off + 8, 4))
	ftree:add(mf.seg_bytes, nb):set_generated()
	ftree:add(mf.seg_last, last):set_generated()
	if not last then
		if avail <= 0 or avail % 4 ~= 0 then bad(ftree, "non-last segment of " .. avail .. " bytes, not a multiple of 4") end
		if avail > 0 then ftree:add(mf.payload, tvb(off + FRAG_HLEN, avail)) end
	elseif so < flen then
		ftree:add(mf.payload, tvb(off + FRAG_HLEN, nb))
		local padn = pad4(nb) - nb
		if avail > nb + padn then
			bad(ftree, string.format("%d bytes left over after the last segment's padding", avail - nb - padn))
		elseif avail < nb + padn then
			bad(ftree, "last segment: padding runs past the packet")
		elseif padn > 0 then
			add_padding(ftree, tvb(off + FRAG_HLEN + nb, padn))
		end
	end
	pinfo.cols.info:set(string.format("MEP src %u run %u seq %u: segment of event %u, %s of %u%s%s", sid,
		run, seq, e, bytes, flen, last and " (last)" or "",
		bitlib.band(flags, 1) ~= 0 and " RESEND" or ""))
	if #problems > 0 then
		pinfo.cols.info:append(" [MALFORMED: " .. table.concat(problems, "; ") .. "]")
	end
	t:append_text(string.format(", source %u, one segment", sid))
	return len
end

function mep.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	pinfo.cols.protocol = "xevb MEP"
	local t = tree:add(mep, tvb(), "xevb MEP")
	local problems = {}
	local function bad(item, msg)
		item:add_proto_expert_info(me.malformed, msg)
		problems[#problems + 1] = msg
	end
	if len < MEP_HLEN then
		bad(t, string.format("%d bytes: shorter than the 16-byte MEP header", len))
		pinfo.cols.info:set("MEP [MALFORMED: " .. problems[1] .. "]")
		return len
	end
	local magic, version, flags = tvb(0, 2):uint(), tvb(2, 1):uint(), tvb(3, 1):uint()
	local sid, nf = tvb(4, 2):uint(), tvb(6, 2):uint()
	local run, seq = tvb(8, 4):uint(), tvb(12, 4):uint()
	local it = t:add(mf.magic, tvb(0, 2))
	if magic ~= MEP_MAGIC then bad(it, string.format("magic 0x%04x, not 0x4D45", magic)) end
	it = t:add(mf.version, tvb(2, 1))
	if version ~= 1 then bad(it, "version " .. version .. ", not 1") end
	local ft = t:add(mf.flags, tvb(3, 1))
	ft:add(mf.resend, tvb(3, 1))
	ft:add(mf.eor, tvb(3, 1))
	ft:add(mf.segment, tvb(3, 1))
	it = ft:add(mf.flags_rsv, tvb(3, 1))
	if bitlib.band(flags, 0xF8) ~= 0 then bad(it, string.format("unknown flag bits 0x%02x", bitlib.band(flags, 0xF8))) end
	it = t:add(mf.source_id, tvb(4, 2))
	if sid > MAX_SOURCE_ID then bad(it, "source_id " .. sid .. " over 4095") end
	it = t:add(mf.n_frags, tvb(6, 2))
	if nf == 0 or nf > MAX_FRAGS then bad(it, "n_frags " .. nf .. " (1..1024)") end
	t:add(mf.run, tvb(8, 4))
	t:add(mf.seq, tvb(12, 4))

	if bitlib.band(flags, 4) ~= 0 then
		return dissect_segment(tvb, pinfo, t, bad, problems, sid, run, seq, nf, flags)
	end
	local off, got, prev_e = MEP_HLEN, 0, nil
	local first_e, last_e
	local check = mep.prefs.check_crc
	while got < nf and off < len do
		if len - off < FRAG_HLEN then
			bad(t:add(mf.frag, tvb(off)), string.format("record %d: %d bytes left, header needs 12", got, len - off))
			off = len
			break
		end
		local e, flen, rsv = tvb(off, 4):uint(), tvb(off + 4, 2):uint(), tvb(off + 6, 2):uint()
		local crc = tvb(off + 8, 4):uint()
		local rec = pad4(FRAG_HLEN + flen)
		local span = math.min(rec, len - off)
		local ftree = t:add(mf.frag, tvb(off, span))
		ftree:set_text(string.format("Fragment %d: event %u, %u bytes", got, e, flen))
		it = ftree:add(mf.event_id, tvb(off, 4))
		if prev_e ~= nil and not seq_after(e, prev_e) then
			bad(it, string.format("event_id %u after %u: not strictly increasing", e, prev_e))
		end
		ftree:add(mf.length, tvb(off + 4, 2))
		it = ftree:add(mf.frsv, tvb(off + 6, 2))
		if rsv ~= 0 then bad(it, "reserved field " .. rsv .. ", must be 0") end
		local crc_item = ftree:add(mf.crc, tvb(off + 8, 4))
		if off + FRAG_HLEN + flen > len then
			bad(ftree, string.format("record %d: payload of %d bytes runs %d bytes past the packet",
				got, flen, off + FRAG_HLEN + flen - len))
			if len > off + FRAG_HLEN then ftree:add(mf.payload, tvb(off + FRAG_HLEN)) end
			off = len
			got = got + 1
			break
		end
		if flen > 0 then
			add_payload(ftree, mf, me, crc_item, tvb(off + FRAG_HLEN, flen), crc, check)
		elseif check then
			ftree:add(mf.crc_ok, crc == 0):set_generated()
			if crc ~= 0 then crc_item:add_proto_expert_info(me.crc, "empty payload, CRC must be 0") end
		end
		local padn = rec - FRAG_HLEN - flen
		if padn > 0 then
			if off + rec > len then
				bad(ftree, "record " .. got .. ": padding runs past the packet")
				off = len
				got = got + 1
				break
			end
			add_padding(ftree, tvb(off + FRAG_HLEN + flen, padn))
		end
		first_e = first_e or e
		last_e = e
		prev_e = e
		off = off + rec
		got = got + 1
	end
	t:add(mf.n_decoded, got):set_generated()
	if got < nf then
		bad(t, string.format("n_frags %d, only %d records in the packet", nf, got))
	elseif off < len then
		bad(t, string.format("%d bytes left over after the last record", len - off))
	end
	pinfo.cols.info:set(string.format("MEP src %u run %u seq %u: %u frags%s%s", sid, run, seq, nf,
		first_e and string.format(", events %u-%u", first_e, last_e) or "",
		bitlib.band(flags, 2) ~= 0 and " END_OF_RUN" or ""))
	if #problems > 0 then
		pinfo.cols.info:append(" [MALFORMED: " .. table.concat(problems, "; ") .. "]")
	end
	t:append_text(string.format(", source %u, %u fragments", sid, nf))
	return len
end

----------------------------------------------------------------------------
-- Built events
----------------------------------------------------------------------------
local EVT_MAGIC, EVT_HLEN, EFRAG_HLEN = 0x45564E54, 32, 12

local evt = Proto("xevb_evt", "xevb built event")
local ef = add_shared_fields({
	magic = ProtoField.uint32("xevb_evt.magic", "Magic", base.HEX),
	incomplete = ProtoField.bool("xevb_evt.flags.incomplete", "INCOMPLETE", 8, nil, 0x01),
	flags_rsv = ProtoField.uint8("xevb_evt.flags.reserved", "Reserved flag bits", base.HEX, nil, 0xFE),
	event_id = ProtoField.uint32("xevb_evt.event_id", "Event ID"),
	total_length = ProtoField.uint32("xevb_evt.total_length", "Total length"),
	n_expected = ProtoField.uint16("xevb_evt.n_expected", "Sources expected"),
	reserved = ProtoField.uint16("xevb_evt.reserved", "Reserved", base.HEX),
	build_ns = ProtoField.uint64("xevb_evt.build_ns", "Build time (ns, CLOCK_REALTIME)"),
	build_time = ProtoField.absolute_time("xevb_evt.build_time", "Build time", base.UTC),
	source_id = ProtoField.uint16("xevb_evt.frag.source_id", "Source ID"),
	length = ProtoField.uint32("xevb_evt.frag.length", "Payload length"),
	missing = ProtoField.uint16("xevb_evt.missing", "Missing source ID"),
	missing_pad = ProtoField.bytes("xevb_evt.missing_padding", "Padding"),
}, "xevb_evt")
evt.fields = ef
local ee = format_experts("xevb_evt", "built event")
ee.incomplete = ProtoExpert.new("xevb_evt.incomplete", "Incomplete event", expert.group.SEQUENCE, expert.severity.NOTE)
evt.experts = { ee.malformed, ee.crc, ee.incomplete }
evt.prefs.tcp_port = Pref.uint("TCP port", 5000, "Farm-node TCP port carrying built events")
evt.prefs.check_crc = Pref.bool("Check CRC-32C", true, "Compute each fragment's CRC-32C and compare")

local function evt_len(tvb, pinfo, off)
	if tvb(off, 4):uint() ~= EVT_MAGIC then
		return tvb:len() - off  -- out of step: the rest is flagged as it is
	end
	local tl = tvb(off + 16, 4):uint()
	if tl < EVT_HLEN then return tvb:len() - off end
	return tl
end

local function evt_one(tvb, pinfo, tree)
	local len = tvb:len()
	local t = tree:add(evt, tvb(), "xevb built event")
	local function bad(item, msg)
		item:add_proto_expert_info(ee.malformed, msg)
		pinfo.cols.info:append(" [MALFORMED: " .. msg .. "]")
	end
	local magic = tvb(0, 4):uint()
	local it = t:add(ef.magic, tvb(0, 4))
	if magic ~= EVT_MAGIC then
		bad(it, string.format("magic 0x%08x, not 0x45564E54: stream out of step", magic))
		return len
	end
	local version, flags, nf = tvb(4, 1):uint(), tvb(5, 1):uint(), tvb(6, 2):uint()
	local run, eid, tl = tvb(8, 4):uint(), tvb(12, 4):uint(), tvb(16, 4):uint()
	local nexp, rsv = tvb(20, 2):uint(), tvb(22, 2):uint()
	it = t:add(ef.version, tvb(4, 1))
	if version ~= 1 then bad(it, "version " .. version .. ", not 1") end
	local ft = t:add(ef.flags, tvb(5, 1))
	ft:add(ef.incomplete, tvb(5, 1))
	it = ft:add(ef.flags_rsv, tvb(5, 1))
	if bitlib.band(flags, 0xFE) ~= 0 then bad(it, "unknown flag bits") end
	it = t:add(ef.n_frags, tvb(6, 2))
	if nf > nexp then bad(it, string.format("n_frags %d above n_expected %d", nf, nexp)) end
	t:add(ef.run, tvb(8, 4))
	t:add(ef.event_id, tvb(12, 4))
	it = t:add(ef.total_length, tvb(16, 4))
	if tl ~= len then bad(it, string.format("total_length %d, %d bytes here", tl, len)) end
	t:add(ef.n_expected, tvb(20, 2))
	it = t:add(ef.reserved, tvb(22, 2))
	if rsv ~= 0 then bad(it, "reserved field must be 0") end
	t:add(ef.build_ns, tvb(24, 8))
	local ns = tvb(24, 8):uint64()
	local secs = (ns / 1000000000):tonumber()
	t:add(ef.build_time, tvb(24, 8), NSTime.new(secs, (ns % 1000000000):tonumber())):set_generated()

	local off, prev_sid = EVT_HLEN, -1
	local check = evt.prefs.check_crc
	for i = 0, nf - 1 do
		if len - off < EFRAG_HLEN then
			bad(t, string.format("record %d: header runs past the event", i))
			return len
		end
		local sid, frsv, flen, crc = tvb(off, 2):uint(), tvb(off + 2, 2):uint(), tvb(off + 4, 4):uint(), tvb(off + 8, 4):uint()
		local rec = pad4(EFRAG_HLEN + flen)
		local ftree = t:add(ef.frag, tvb(off, math.min(rec, len - off)))
		ftree:set_text(string.format("Fragment of source %u, %u bytes", sid, flen))
		it = ftree:add(ef.source_id, tvb(off, 2))
		if sid <= prev_sid then bad(it, "source_ids not in ascending order") end
		prev_sid = sid
		it = ftree:add(ef.frsv, tvb(off + 2, 2))
		if frsv ~= 0 then bad(it, "reserved field must be 0") end
		ftree:add(ef.length, tvb(off + 4, 4))
		local crc_item = ftree:add(ef.crc, tvb(off + 8, 4))
		if off + rec > len then
			bad(ftree, string.format("record %d: %u bytes run past the event", i, flen))
			return len
		end
		if flen > 0 then
			add_payload(ftree, ef, ee, crc_item, tvb(off + EFRAG_HLEN, flen), crc, check)
		end
		if rec > EFRAG_HLEN + flen then
			ftree:add(ef.padding, tvb(off + EFRAG_HLEN + flen, rec - EFRAG_HLEN - flen))
		end
		off = off + rec
	end
	if bitlib.band(flags, 1) ~= 0 then
		local nm = nexp - nf
		t:add_proto_expert_info(ee.incomplete, string.format("%d of %d sources missing", nm, nexp))
		if off + 2 * nm > len then
			bad(t, "missing-source list runs past the event")
			return len
		end
		for i = 0, nm - 1 do t:add(ef.missing, tvb(off + 2 * i, 2)) end
		off = off + 2 * nm
		if off % 4 ~= 0 and off + 2 <= len then
			t:add(ef.missing_pad, tvb(off, 2))
			off = off + 2
		end
	elseif nf ~= nexp then
		bad(t, string.format("complete event with %d of %d fragments", nf, nexp))
	end
	if off ~= len then bad(t, string.format("%d bytes left over in the event", len - off)) end
	t:append_text(string.format(", event %u, %u/%u fragments%s", eid, nf, nexp,
		bitlib.band(flags, 1) ~= 0 and ", INCOMPLETE" or ""))
	return len
end

function evt.dissector(tvb, pinfo, tree)
	pinfo.cols.protocol = "xevb EVT"
	local n0 = 0
	dissect_tcp_pdus(tvb, tree, 20, evt_len, function(t2, p2, tr2)
		n0 = n0 + 1
		return evt_one(t2, p2, tr2)
	end, true)
	pinfo.cols.info:set(string.format("built events (%d here)", n0))
	return tvb:len()
end

-- A stream to another port is taken when it starts with an event header.
local function evt_heur(tvb, pinfo, tree)
	if tvb:len() < 20 or tvb(0, 4):uint() ~= EVT_MAGIC or tvb(4, 1):uint() ~= 1 then
		return false
	end
	evt.dissector(tvb, pinfo, tree)
	pinfo.conversation = evt
	return true
end

----------------------------------------------------------------------------
-- Registration
----------------------------------------------------------------------------
local reg = { ip_proto = 0, udp_port = 0, tcp_port = 0 }

local function register()
	local ipt, udpt, tcpt = DissectorTable.get("ip.proto"), DissectorTable.get("udp.port"), DissectorTable.get("tcp.port")
	if reg.ip_proto ~= 0 then ipt:remove(reg.ip_proto, mep) end
	if reg.udp_port ~= 0 then udpt:remove(reg.udp_port, mep) end
	if reg.tcp_port ~= 0 then tcpt:remove(reg.tcp_port, evt) end
	reg.ip_proto, reg.udp_port, reg.tcp_port = mep.prefs.ip_proto, mep.prefs.udp_port, evt.prefs.tcp_port
	if reg.ip_proto ~= 0 then ipt:add(reg.ip_proto, mep) end
	if reg.udp_port ~= 0 then udpt:add(reg.udp_port, mep) end
	if reg.tcp_port ~= 0 then tcpt:add(reg.tcp_port, evt) end
end

mep.prefs_changed = register
evt.prefs_changed = register
register()
evt:register_heuristic("tcp", evt_heur)
