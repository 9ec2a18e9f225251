package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// The MongoDB-wire front: clients connect to it; it opens one connection to FerretDB's internal
// port per client connection and passes every frame through, in order, holding the locks that
// make FerretDB's read-then-write commands atomic (see the table at the top of main.go and
// planCommand below). It also rewrites the few commands and replies the launcher itself answers
// for (TTL indexes in createIndexes/listIndexes, the launcher's identity in buildInfo).

// Wire opcodes and OP_MSG flag bits the front looks at.
const (
	opReply   = 1
	opQuery   = 2004
	opGetMore = 2005
	opMsg     = 2013

	flagChecksumPresent = 1 << 0
	flagMoreToCome      = 1 << 1

	maxFrame     = 48_000_000 + 16*1024 // MongoDB's maxMessageSizeBytes, plus headroom
	codeDupKey   = 11000
	headerLength = 16
)

type front struct {
	backend string // FerretDB's internal address
	locks   *lockTable
	ttl     *ttlManager // nil: no TTL support
	noLocks bool        // -unsafe-no-locks: forward without locking (to show what the locks are for)
	// writes bounds the read-then-write commands inside FerretDB at once. FerretDB v1 keeps the
	// PostgreSQL connection of its read open while the write takes a second one from the same
	// pool (50 by default): as many concurrent updates as the pool holds deadlock it for good.
	writes chan struct{}
	logger *slog.Logger
}

// serve accepts client connections until ctx ends.
func (f *front) serve(ctx context.Context, ln net.Listener) error {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		go f.handle(c)
	}
}

func (f *front) handle(client net.Conn) {
	defer client.Close()
	defer func() {
		if r := recover(); r != nil {
			f.logger.Error("front: connection dropped after a panic", "panic", r)
		}
	}()
	backend, err := net.DialTimeout("tcp", f.backend, 5*time.Second)
	if err != nil {
		f.logger.Warn("front: FerretDB does not answer", "addr", f.backend, "error", err)
		return
	}
	defer backend.Close()
	c := &conn{client: client, backend: backend, cr: bufio.NewReaderSize(client, 64<<10), br: bufio.NewReaderSize(backend, 64<<10)}
	for {
		req, err := readFrame(c.cr)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				f.logger.Debug("front: client read", "error", err)
			}
			return
		}
		if err = f.roundTrip(c, req); err != nil {
			f.logger.Debug("front: round trip", "error", err)
			return
		}
	}
}

type conn struct {
	client, backend net.Conn
	cr, br          *bufio.Reader
}

// readFrame reads one whole wire message (header included).
func readFrame(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(hdr[:])))
	if n < headerLength || n > maxFrame {
		return nil, fmt.Errorf("bad message length %d", n)
	}
	buf := make([]byte, n)
	copy(buf, hdr[:])
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		return nil, err
	}
	return buf, nil
}

func opcode(frame []byte) int32 { return int32(binary.LittleEndian.Uint32(frame[12:16])) }

func msgFlags(frame []byte) uint32 {
	if opcode(frame) != opMsg || len(frame) < headerLength+4 {
		return 0
	}
	return binary.LittleEndian.Uint32(frame[16:20])
}

// roundTrip forwards one client message and the reply (or replies) it gets.
func (f *front) roundTrip(c *conn, req []byte) error {
	switch opcode(req) {
	case opMsg:
		m, err := parseMsg(req)
		if err != nil { // let FerretDB answer whatever this is
			return f.forward(c, req, msgFlags(req)&flagMoreToCome == 0)
		}
		return f.command(c, req, m)
	case opQuery, opGetMore: // legacy handshakes (isMaster over OP_QUERY) answer with one OP_REPLY
		return f.forward(c, req, true)
	default: // other legacy opcodes get no reply
		return f.forward(c, req, false)
	}
}

// forward passes a message through unlocked and relays its replies.
func (f *front) forward(c *conn, req []byte, expectReply bool) error {
	if _, err := c.backend.Write(req); err != nil {
		return err
	}
	if !expectReply {
		return nil
	}
	return relayReplies(c, nil)
}

// relayReplies copies replies from FerretDB to the client until one comes without moreToCome
// (exhaust cursors answer one request with several). first, if given, is the first reply,
// already read (and possibly rewritten).
func relayReplies(c *conn, first []byte) error {
	for reply := first; ; reply = nil {
		if reply == nil {
			var err error
			if reply, err = readFrame(c.br); err != nil {
				return err
			}
		}
		if _, err := c.client.Write(reply); err != nil {
			return err
		}
		if msgFlags(reply)&flagMoreToCome == 0 {
			return nil
		}
	}
}

// command handles an OP_MSG: lock as planned, rewrite the request if the launcher must,
// forward, retry a racing upsert once, rewrite the reply if the launcher must, relay.
func (f *front) command(c *conn, req []byte, m *wireMsg) error {
	p := planCommand(m)

	var ttlSpecs []ttlSpec
	if p.cmd == "createIndexes" && f.ttl != nil {
		req, ttlSpecs = f.ttl.stripCreateIndexes(req, m, p)
	}

	unlock := func() {}
	if !f.noLocks {
		switch p.lock {
		case lockDocs:
			unlock = f.locks.lockDocuments(p.ns, p.keys)
		case lockColl:
			unlock = f.locks.lockCollection(p.ns)
		}
	}
	if p.lock != lockNone {
		f.writes <- struct{}{}
	}
	reply, err := f.exchange(c, req, m, p)
	if p.lock != lockNone {
		<-f.writes
	}
	unlock()
	if err != nil || reply == nil {
		return err
	}

	switch {
	case p.cmd == "buildInfo" || p.cmd == "buildinfo":
		reply = withBuildInfo(reply, f.backend)
	case p.cmd == "createIndexes" && f.ttl != nil && replyOK(reply):
		f.ttl.remember(p, ttlSpecs, m)
	case (p.cmd == "dropIndexes" || p.cmd == "deleteIndexes" || p.cmd == "drop" || p.cmd == "dropDatabase") && f.ttl != nil && replyOK(reply):
		f.ttl.forgetDropped(p, m)
	case p.cmd == "listIndexes" && f.ttl != nil:
		reply = f.ttl.annotateListIndexes(reply, p)
	}
	return relayReplies(c, reply)
}

// exchange sends req to FerretDB and returns its first reply (nil for a moreToCome request,
// which gets none). An upsert answered with a duplicate key error is sent once more: another
// upsert of the same new key won the insert, and the retry now finds and updates its document.
func (f *front) exchange(c *conn, req []byte, m *wireMsg, p plan) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		if _, err := c.backend.Write(req); err != nil {
			return nil, err
		}
		if m.flags&flagMoreToCome != 0 {
			return nil, nil
		}
		reply, err := readFrame(c.br)
		if err != nil {
			return nil, err
		}
		if attempt == 0 && p.retryUpsert && msgFlags(reply)&flagMoreToCome == 0 && isDupKeyReply(reply) {
			f.logger.Debug("front: retrying an upsert that lost a duplicate-key race", "ns", p.ns)
			continue
		}
		return reply, nil
	}
}

// ---------------------------------------------------------------------------------------------
// OP_MSG parsing and building.

type wireMsg struct {
	flags uint32
	doc   bsoncore.Document              // section 0: the command
	seqs  map[string][]bsoncore.Document // kind-1 sections (document sequences) by identifier
	rest  []byte                         // the raw kind-1 sections, to rebuild the message
}

func parseMsg(frame []byte) (*wireMsg, error) {
	if len(frame) < headerLength+5 {
		return nil, errors.New("short OP_MSG")
	}
	body := frame[headerLength:]
	m := &wireMsg{flags: binary.LittleEndian.Uint32(body)}
	end := len(body)
	if m.flags&flagChecksumPresent != 0 {
		end -= 4
	}
	for p := 4; p < end; {
		kind := body[p]
		p++
		if end-p < 4 {
			return nil, errors.New("truncated section")
		}
		n := int(int32(binary.LittleEndian.Uint32(body[p:])))
		if n < 5 || n > end-p {
			return nil, errors.New("bad section length")
		}
		sec := body[p : p+n]
		switch kind {
		case 0:
			if m.doc != nil {
				return nil, errors.New("two kind-0 sections")
			}
			m.doc = bsoncore.Document(sec)
		case 1:
			m.rest = append(m.rest, body[p-1:p+n]...)
			i := 4
			for i < len(sec) && sec[i] != 0 {
				i++
			}
			if i >= len(sec) {
				return nil, errors.New("bad sequence identifier")
			}
			id := string(sec[4:i])
			if m.seqs == nil {
				m.seqs = map[string][]bsoncore.Document{}
			}
			for i++; i < len(sec); {
				if len(sec)-i < 5 {
					return nil, errors.New("truncated sequence")
				}
				dn := int(int32(binary.LittleEndian.Uint32(sec[i:])))
				if dn < 5 || dn > len(sec)-i {
					return nil, errors.New("bad document in sequence")
				}
				m.seqs[id] = append(m.seqs[id], bsoncore.Document(sec[i:i+dn]))
				i += dn
			}
		default:
			return nil, fmt.Errorf("unknown section kind %d", kind)
		}
		p += n
	}
	if m.doc == nil {
		return nil, errors.New("no kind-0 section")
	}
	if err := m.doc.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// buildMsg is the OP_MSG frame with the header fields of like (request id, response to), flags
// (without checksum), section 0 doc and the raw kind-1 sections rest.
func buildMsg(like []byte, flags uint32, doc bsoncore.Document, rest []byte) []byte {
	n := headerLength + 4 + 1 + len(doc) + len(rest)
	out := make([]byte, 0, n)
	out = binary.LittleEndian.AppendUint32(out, uint32(n))
	out = append(out, like[4:16]...)
	out = binary.LittleEndian.AppendUint32(out, flags&^flagChecksumPresent)
	out = append(out, 0)
	out = append(out, doc...)
	return append(out, rest...)
}

// replyDoc is section 0 of an OP_MSG reply, or nil.
func replyDoc(reply []byte) (*wireMsg, bsoncore.Document) {
	if opcode(reply) != opMsg {
		return nil, nil
	}
	m, err := parseMsg(reply)
	if err != nil {
		return nil, nil
	}
	return m, m.doc
}

func replyOK(reply []byte) bool {
	_, doc := replyDoc(reply)
	if doc == nil {
		return false
	}
	ok, isNum := number(doc.Lookup("ok"))
	return isNum && ok == 1
}

// isDupKeyReply: the command failed with code 11000, or one of its writeErrors has it.
func isDupKeyReply(reply []byte) bool {
	_, doc := replyDoc(reply)
	if doc == nil {
		return false
	}
	if code, ok := number(doc.Lookup("code")); ok && code == codeDupKey {
		return true
	}
	if arr, ok := doc.Lookup("writeErrors").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				if code, ok := number(d.Lookup("code")); ok && code == codeDupKey {
					return true
				}
			}
		}
	}
	return false
}

// withBuildInfo adds the launcher's identity to a buildInfo reply: feedsLauncher, the hash of
// the sources it was built from (infra.mjs compares it with the sources it has), and
// feedsLauncherInternal, FerretDB's own address behind the front (tests and benchmarks use it).
func withBuildInfo(reply []byte, internal string) []byte {
	m, doc := replyDoc(reply)
	if doc == nil {
		return reply
	}
	doc = appendElements(doc,
		bsoncore.AppendStringElement(nil, "feedsLauncher", sourcesHash),
		bsoncore.AppendStringElement(nil, "feedsLauncherInternal", internal))
	return buildMsg(reply, m.flags, doc, m.rest)
}

// appendElements is doc with raw elements added at its end.
func appendElements(doc bsoncore.Document, elems ...[]byte) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(nil)
	out = append(out, doc[4:len(doc)-1]...)
	for _, e := range elems {
		out = append(out, e...)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// replaceValue is doc with the value of key replaced (or, with drop, the element removed).
func replaceValue(doc bsoncore.Document, key string, val bsoncore.Value, drop bool) bsoncore.Document {
	elems, _ := doc.Elements()
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, e := range elems {
		switch {
		case e.Key() != key:
			out = append(out, e...)
		case !drop:
			out = bsoncore.AppendValueElement(out, key, val)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

func arrayOf(docs []bsoncore.Document) bsoncore.Value {
	idx, out := bsoncore.AppendArrayStart(nil)
	for i, d := range docs {
		out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
	}
	out, _ = bsoncore.AppendArrayEnd(out, idx)
	return bsoncore.Value{Type: bsontype.Array, Data: out}
}

// number reads a BSON number; ok is false for anything else (or a missing value).
func number(v bsoncore.Value) (float64, bool) {
	switch v.Type {
	case bsontype.Double:
		return v.Double(), true
	case bsontype.Int32:
		return float64(v.Int32()), true
	case bsontype.Int64:
		return float64(v.Int64()), true
	}
	return 0, false
}

// truthy reads a BSON flag as MongoDB does (true, or a non-zero number).
func truthy(v bsoncore.Value) bool {
	if v.Type == bsontype.Boolean {
		return v.Boolean()
	}
	n, ok := number(v)
	return ok && n != 0
}

// ---------------------------------------------------------------------------------------------
// Lock planning.

const (
	lockNone = iota
	lockDocs // shared hold of the collection, exclusive hold of each document named
	lockColl // exclusive hold of the collection
)

type plan struct {
	cmd, db, coll, ns string
	lock              int
	keys              []string // document lock keys (lockDocs)
	retryUpsert       bool     // a single upsert: retried once on a duplicate key error
}

// planCommand decides what the front locks for a command (keep the table in main.go's comment
// in step):
//
//	update         every statement's q pins one _id (statements may be upserts, multi or not)
//	               -> those documents; otherwise -> the collection
//	delete         every statement's q pins one _id -> those documents; otherwise -> the collection
//	findAndModify  query pins one _id -> that document; otherwise -> the collection
//	anything else  nothing (reads, inserts, index and collection commands)
//
// "Pins one _id": the filter has a top-level _id equal to a scalar or a plain document
// ({_id: x} or {_id: {$eq: x}}), whatever else it holds. An upsert whose filter does not pin _id
// takes the collection: two such upserts could otherwise both insert.
func planCommand(m *wireMsg) plan {
	var p plan
	first, err := m.doc.IndexErr(0)
	if err != nil {
		return p
	}
	p.cmd = first.Key()
	p.db, _ = m.doc.Lookup("$db").StringValueOK()
	p.coll, _ = first.Value().StringValueOK()
	p.ns = p.db + "." + p.coll

	var filters []bsoncore.Document
	upserts := 0
	switch p.cmd {
	case "update":
		for _, s := range m.statements("updates") {
			q, _ := s.Lookup("q").DocumentOK()
			filters = append(filters, q)
			if truthy(s.Lookup("upsert")) {
				upserts++
			}
		}
		p.retryUpsert = len(filters) == 1 && upserts == 1
	case "delete":
		for _, s := range m.statements("deletes") {
			q, _ := s.Lookup("q").DocumentOK()
			filters = append(filters, q)
		}
	case "findAndModify", "findandmodify":
		q, _ := m.doc.Lookup("query").DocumentOK()
		filters = append(filters, q)
		p.retryUpsert = truthy(m.doc.Lookup("upsert")) && !truthy(m.doc.Lookup("remove"))
	default:
		return p
	}
	if len(filters) == 0 {
		return p
	}
	p.lock = lockDocs
	for _, q := range filters {
		k, ok := idKey(q)
		if !ok {
			p.lock, p.keys = lockColl, nil
			break
		}
		p.keys = append(p.keys, k)
	}
	return p
}

// statements are the documents of array name in section 0, or of the kind-1 section so named.
func (m *wireMsg) statements(name string) []bsoncore.Document {
	if arr, ok := m.doc.Lookup(name).ArrayOK(); ok {
		vals, _ := arr.Values()
		out := make([]bsoncore.Document, 0, len(vals))
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				out = append(out, d)
			}
		}
		return out
	}
	return m.seqs[name]
}

// idKey is the lock key of the one document filter q can match by its _id, if q pins one.
func idKey(q bsoncore.Document) (string, bool) {
	if q == nil {
		return "", false
	}
	v, err := q.LookupErr("_id")
	if err != nil {
		return "", false
	}
	return valueKey(v)
}

func valueKey(v bsoncore.Value) (string, bool) {
	switch v.Type {
	case bsontype.Double, bsontype.Int32, bsontype.Int64:
		// 1, 1.0 and NumberLong(1) are the same _id to MongoDB.
		n, _ := number(v)
		if math.IsNaN(n) {
			return "", false
		}
		return "n:" + strconv.FormatFloat(n, 'g', -1, 64), true
	case bsontype.EmbeddedDocument:
		d := v.Document()
		e, err := d.IndexErr(0)
		if err == nil && strings.HasPrefix(e.Key(), "$") {
			if _, err2 := d.IndexErr(1); e.Key() == "$eq" && err2 != nil {
				return valueKey(e.Value())
			}
			return "", false // an operator ($in, $gt...): not one document
		}
		return "d:" + string(v.Data), true
	case bsontype.String, bsontype.ObjectID, bsontype.Boolean, bsontype.DateTime, bsontype.Binary,
		bsontype.Timestamp, bsontype.Decimal128, bsontype.Symbol:
		return string(rune(v.Type)) + ":" + string(v.Data), true
	}
	return "", false // arrays, regular expressions, null...: not one document
}
