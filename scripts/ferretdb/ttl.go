package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
	"go.mongodb.org/mongo-driver/x/bsonx/bsoncore"
)

// TTL indexes, which FerretDB v1 refuses ("Index option expireAfterSeconds is not implemented
// yet"). The front strips expireAfterSeconds from createIndexes (FerretDB creates the plain
// index), records the spec in ttlStoreDB.ttlStoreColl (durable, shared by every launcher on the
// same backend), adds expireAfterSeconds back to listIndexes replies, and every period deletes
// the documents whose field is a date (or an array holding one) older than now - seconds, as
// MongoDB's TTL monitor does, under the collection's exclusive lock like any client delete.
// A spec whose index listIndexes no longer shows (dropIndexes, drop, dropDatabase) is removed
// on the next sweep. Specs are swept only by the launcher whose front created the index (its
// listen address is the spec's owner): its locks are the ones the collection's writers take, and
// FerretDB v1 caches its catalogue per process, so another launcher on the same PostgreSQL
// database does not even see the collection. The last createIndexes wins ownership; the specs of
// a private launcher that is gone stay behind, unused (its listen port was ephemeral).

const (
	ttlStoreDB   = "feeds_launcher"
	ttlStoreColl = "ttl_indexes"
)

type ttlSpec struct {
	ID      string `bson:"_id"` // db.coll$index
	DB      string `bson:"db"`
	Coll    string `bson:"coll"`
	Index   string `bson:"index"`
	Field   string `bson:"field"`
	Seconds int64  `bson:"seconds"`
	Owner   string `bson:"owner"` // listen address of the launcher that sweeps it
}

type ttlManager struct {
	client *mongo.Client // straight to FerretDB's internal port
	store  *mongo.Collection
	locks  *lockTable
	writes chan struct{} // the front's bound on writes inside FerretDB
	period time.Duration
	owner  string // this launcher's listen address
	logger *slog.Logger
}

func newTTLManager(internal, owner string, locks *lockTable, writes chan struct{}, period time.Duration, logger *slog.Logger) (*ttlManager, error) {
	opts := options.Client().ApplyURI("mongodb://" + internal + "/?directConnection=true").
		SetRetryWrites(false).SetMaxPoolSize(4).SetServerSelectionTimeout(10 * time.Second)
	client, err := mongo.Connect(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	return &ttlManager{
		client: client,
		store:  client.Database(ttlStoreDB).Collection(ttlStoreColl),
		locks:  locks,
		writes: writes,
		period: period,
		owner:  owner,
		logger: logger,
	}, nil
}

// stripCreateIndexes removes expireAfterSeconds from the indexes of a createIndexes request and
// returns the request to send with the TTL specs to record once FerretDB has created them.
// A compound index keeps the option (MongoDB refuses TTL on those; so will FerretDB).
func (t *ttlManager) stripCreateIndexes(req []byte, m *wireMsg, p plan) ([]byte, []ttlSpec) {
	arr, ok := m.doc.Lookup("indexes").ArrayOK()
	if !ok {
		return req, nil
	}
	vals, _ := arr.Values()
	indexes := make([]bsoncore.Document, 0, len(vals))
	var specs []ttlSpec
	for _, v := range vals {
		idx, ok := v.DocumentOK()
		if !ok {
			return req, nil
		}
		secs, isNum := number(idx.Lookup("expireAfterSeconds"))
		key, _ := idx.Lookup("key").DocumentOK()
		keys, _ := key.Elements()
		if !isNum || len(keys) != 1 || secs < 0 {
			indexes = append(indexes, idx)
			continue
		}
		name, ok := idx.Lookup("name").StringValueOK()
		if !ok { // MongoDB's default name: field_direction
			name = keys[0].Key() + "_" + keys[0].Value().String()
		}
		specs = append(specs, ttlSpec{
			ID: p.db + "." + p.coll + "$" + name, DB: p.db, Coll: p.coll, Index: name,
			Field: keys[0].Key(), Seconds: int64(secs), Owner: t.owner,
		})
		indexes = append(indexes, replaceValue(idx, "expireAfterSeconds", bsoncore.Value{}, true))
	}
	if len(specs) == 0 {
		return req, nil
	}
	doc := replaceValue(m.doc, "indexes", arrayOf(indexes), false)
	return buildMsg(req, m.flags, doc, m.rest), specs
}

// remember records specs of indexes FerretDB has just created, and forgets the TTL of the
// indexes created without one (an index dropped and created again under the same name).
func (t *ttlManager) remember(p plan, specs []ttlSpec, m *wireMsg) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ttl := map[string]bool{}
	for _, s := range specs {
		ttl[s.Index] = true
	}
	if arr, ok := m.doc.Lookup("indexes").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			idx, _ := v.DocumentOK()
			if name, ok := idx.Lookup("name").StringValueOK(); ok && !ttl[name] {
				t.forget(ctx, bson.D{{Key: "_id", Value: p.db + "." + p.coll + "$" + name}})
			}
		}
	}
	for _, s := range specs {
		var err error
		for range 2 { // two launchers recording the same new spec: one insert wins, retry updates
			_, err = t.store.ReplaceOne(ctx, bson.D{{Key: "_id", Value: s.ID}}, s, options.Replace().SetUpsert(true))
			if !mongo.IsDuplicateKeyError(err) {
				break
			}
		}
		if err != nil {
			t.logger.Error("TTL: cannot record index", "id", s.ID, "error", err)
		} else {
			t.logger.Info("TTL index recorded", "ns", s.DB+"."+s.Coll, "index", s.Index, "field", s.Field, "seconds", s.Seconds)
		}
	}
}

// forgetDropped forgets the specs of the indexes a successful dropIndexes, drop or
// dropDatabase removed (an index named by its key pattern is left to the sweep).
func (t *ttlManager) forgetDropped(p plan, m *wireMsg) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch p.cmd {
	case "dropDatabase":
		t.forget(ctx, bson.D{{Key: "db", Value: p.db}})
	case "drop":
		t.forget(ctx, bson.D{{Key: "db", Value: p.db}, {Key: "coll", Value: p.coll}})
	default: // dropIndexes: index is a name, "*", an array of names or a key pattern
		v := m.doc.Lookup("index")
		var names []string
		if name, ok := v.StringValueOK(); ok {
			names = append(names, name)
		} else if arr, ok := v.ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, n := range vals {
				if name, ok := n.StringValueOK(); ok {
					names = append(names, name)
				}
			}
		}
		for _, name := range names {
			if name == "*" {
				t.forget(ctx, bson.D{{Key: "db", Value: p.db}, {Key: "coll", Value: p.coll}})
			} else {
				t.forget(ctx, bson.D{{Key: "_id", Value: p.db + "." + p.coll + "$" + name}})
			}
		}
	}
}

func (t *ttlManager) forget(ctx context.Context, filter bson.D) {
	if _, err := t.store.DeleteMany(ctx, filter); err != nil {
		t.logger.Warn("TTL: cannot forget index specs", "filter", filter, "error", err)
	}
}

// annotateListIndexes adds expireAfterSeconds to the TTL indexes of a listIndexes reply.
func (t *ttlManager) annotateListIndexes(reply []byte, p plan) []byte {
	m, doc := replyDoc(reply)
	if doc == nil {
		return reply
	}
	cursor, ok := doc.Lookup("cursor").DocumentOK()
	if !ok {
		return reply
	}
	batch, ok := cursor.Lookup("firstBatch").ArrayOK()
	if !ok {
		return reply
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var specs []ttlSpec
	cur, err := t.store.Find(ctx, bson.D{{Key: "db", Value: p.db}, {Key: "coll", Value: p.coll}})
	if err == nil {
		err = cur.All(ctx, &specs)
	}
	if err != nil {
		t.logger.Warn("TTL: cannot read index specs", "error", err)
		return reply
	}
	if len(specs) == 0 {
		return reply
	}
	secs := map[string]int64{}
	for _, s := range specs {
		secs[s.Index] = s.Seconds
	}
	vals, _ := batch.Values()
	out := make([]bsoncore.Document, 0, len(vals))
	changed := false
	for _, v := range vals {
		idx, ok := v.DocumentOK()
		if !ok {
			return reply
		}
		name, _ := idx.Lookup("name").StringValueOK()
		if s, ok := secs[name]; ok {
			if _, err := idx.LookupErr("expireAfterSeconds"); err != nil {
				idx = appendElements(idx, bsoncore.AppendInt32Element(nil, "expireAfterSeconds", int32(s)))
				changed = true
			}
		}
		out = append(out, idx)
	}
	if !changed {
		return reply
	}
	cursor = replaceValue(cursor, "firstBatch", arrayOf(out), false)
	doc = replaceValue(doc, "cursor", bsoncore.Value{Type: bsontype.EmbeddedDocument, Data: cursor}, false)
	return buildMsg(reply, m.flags, doc, m.rest)
}

// run sweeps every period until ctx ends.
func (t *ttlManager) run(ctx context.Context) {
	tick := time.NewTicker(t.period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			_ = t.client.Disconnect(context.Background())
			return
		case <-tick.C:
			t.sweep(ctx)
		}
	}
}

func (t *ttlManager) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(t.period, 30*time.Second))
	defer cancel()
	var specs []ttlSpec
	cur, err := t.store.Find(ctx, bson.D{})
	if err == nil {
		err = cur.All(ctx, &specs)
	}
	if err != nil {
		if ctx.Err() == nil {
			t.logger.Warn("TTL: cannot read index specs", "error", err)
		}
		return
	}
	for _, s := range specs {
		if err := t.apply(ctx, s); err != nil && ctx.Err() == nil {
			t.logger.Warn("TTL: sweep failed", "ns", s.DB+"."+s.Coll, "index", s.Index, "error", err)
		}
	}
}

// apply deletes the documents spec s says have expired, or forgets s if its index is gone.
func (t *ttlManager) apply(ctx context.Context, s ttlSpec) error {
	if s.Owner != t.owner {
		// Another launcher on the same backend sweeps it, under its own locks. Nor can this one
		// tell whether the index is gone: FerretDB v1 caches the catalogue per process and
		// does not see collections another FerretDB created.
		return nil
	}
	exists, err := t.indexExists(ctx, s)
	if err != nil {
		return err
	}
	if !exists {
		_, err = t.store.DeleteOne(ctx, bson.D{{Key: "_id", Value: s.ID}})
		t.logger.Info("TTL index gone, spec dropped", "ns", s.DB+"."+s.Coll, "index", s.Index)
		return err
	}
	// As MongoDB: a date before the cutoff, or an array holding one; $lt against a date
	// matches only dates (type bracketing), so other values never expire.
	filter := bson.D{{Key: s.Field, Value: bson.D{{Key: "$lt", Value: time.Now().Add(-time.Duration(s.Seconds) * time.Second)}}}}
	coll := t.client.Database(s.DB).Collection(s.Coll)
	// A cheap unlocked look first: most sweeps find nothing and should not block writers.
	err = coll.FindOne(ctx, filter, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		return err
	}
	unlock := t.locks.lockCollection(s.DB + "." + s.Coll) // as a client's multi-document delete
	t.writes <- struct{}{}
	res, err := coll.DeleteMany(ctx, filter)
	<-t.writes
	unlock()
	if err != nil {
		return err
	}
	t.logger.Debug("TTL: expired documents deleted", "ns", s.DB+"."+s.Coll, "deleted", res.DeletedCount)
	return nil
}

func (t *ttlManager) indexExists(ctx context.Context, s ttlSpec) (bool, error) {
	var res struct {
		Cursor struct {
			FirstBatch []struct {
				Name string `bson:"name"`
			} `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	err := t.client.Database(s.DB).RunCommand(ctx, bson.D{{Key: "listIndexes", Value: s.Coll}}).Decode(&res)
	var ce mongo.CommandError
	if errors.As(err, &ce) && ce.Code == 26 { // NamespaceNotFound: collection or database dropped
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, ix := range res.Cursor.FirstBatch {
		if ix.Name == s.Index {
			return true, nil
		}
	}
	return false, nil
}
