package pgstore

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// presizeCases are the arrays a save sends, 1000 elements each.
func presizeCases() []struct {
	name  string
	oid   uint32
	value sizer
} {
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	var (
		ids   = make(array[pgtype.Int8], 1000)
		nos   = make(array[pgtype.Int4], 1000)
		times = make(array[pgtype.Timestamptz], 1000)
		uids  = make(array[pgtype.Text], 1000)
		keys  = make(texts, 1000)
	)
	for i := range ids {
		ids[i] = pgtype.Int8{Int64: int64(100000 + i), Valid: true}
		nos[i] = pgtype.Int4{Int32: int32(i), Valid: true}
		times[i] = pgtype.Timestamptz{Time: at.Add(time.Duration(i) * time.Second), Valid: true}
		uids[i] = pgtype.Text{String: "d4m0abc0000000" + strconv.Itoa(100000+i), Valid: true}
		keys[i] = "key-" + strconv.Itoa(i)
	}
	return []struct {
		name  string
		oid   uint32
		value sizer
	}{
		{"int8", pgtype.Int8ArrayOID, ids},
		{"int4", pgtype.Int4ArrayOID, nos},
		{"timestamptz", pgtype.TimestamptzArrayOID, times},
		{"text", pgtype.TextArrayOID, uids},
		{"texts", pgtype.TextArrayOID, keys},
	}
}

// TestPresizedArraysEncodeOnce: through a type map with presizeArrays, an
// array parameter encodes to the bytes it did without, its encodedSize is
// exactly their length, and it grows pgx's fresh 256-byte parameter buffer
// once, where appending element after element grew it about twenty times.
func TestPresizedArraysEncodeOnce(t *testing.T) {
	plain, sized := pgtype.NewMap(), pgtype.NewMap()
	presizeArrays(sized)
	for _, c := range presizeCases() {
		want, err := plain.Encode(c.oid, pgtype.BinaryFormatCode, c.value, nil)
		must(t, err)
		got, err := sized.Encode(c.oid, pgtype.BinaryFormatCode, c.value, nil)
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the presized encoding differs", c.name)
		}
		if n := c.value.encodedSize(); n != len(want) {
			t.Errorf("%s: encodedSize %d, encoded %d bytes", c.name, n, len(want))
		}
		encode := func(m *pgtype.Map) func() {
			return func() {
				if _, err := m.Encode(c.oid, pgtype.BinaryFormatCode, c.value, make([]byte, 0, 256)); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The 256 bytes, the grown buffer, the array's dimension: 3; the
		// race detector adds one. Without presizing, 11 to 20.
		allocs, before := testing.AllocsPerRun(10, encode(sized)), testing.AllocsPerRun(10, encode(plain))
		if allocs > 4 || 2*allocs > before {
			t.Errorf("%s: %v allocations to encode 1000 elements into a fresh buffer (%v without presizing)", c.name, allocs, before)
		}
	}
}

// TestOpenPresizesArrays: the connections of Open's pool encode array
// parameters through presized, and a NULL array is still NULL.
func TestOpenPresizesArrays(t *testing.T) {
	t.Parallel()
	s := testStore(t)
	c, err := s.Pool().Acquire(context.Background())
	must(t, err)
	defer c.Release()
	for _, oid := range presizedArrays {
		typ, ok := c.Conn().TypeMap().TypeForOID(oid)
		if !ok {
			t.Fatalf("no type for OID %d", oid)
		}
		if _, ok := typ.Codec.(presized); !ok {
			t.Errorf("OID %d (%s): codec %T, want presized", oid, typ.Name, typ.Codec)
		}
	}
	var n int
	must(t, c.QueryRow(context.Background(), "SELECT cardinality($1::int8[]) + cardinality($2::text[])", array[pgtype.Int8]{{Int64: 1, Valid: true}}, texts{"a", "b"}).Scan(&n))
	eq(t, n, 3)
	var null bool
	must(t, c.QueryRow(context.Background(), "SELECT $1::text[] IS NULL", texts(nil)).Scan(&null))
	eq(t, null, true)
}

// BenchmarkBuildParams builds the parameters of a Save of 1000 started
// attempts (the keys, the attempt UIDs, three times and a number) the way
// pgx does for each statement on a connection (ExtendedQueryBuilder.Build,
// which drops its buffer of the last statement), through pgx's own type
// map and through one with presizeArrays; "int64-keys" sends the keys as
// array[int64], as Save did before, which pgx boxes one by one.
//
//	go test ./models/pgstore -run '^$' -bench BuildParams -benchmem
func BenchmarkBuildParams(b *testing.B) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	ids, keys := make([]string, 1000), make([]int64, 1000)
	uids := make(array[pgtype.Text], 1000)
	for i := range ids {
		ids[i], keys[i] = strconv.Itoa(100000+i), int64(100000+i)
		uids[i] = pgtype.Text{String: "d4m0abc0000000" + strconv.Itoa(100000+i), Valid: true}
	}
	sd := &pgconn.StatementDescription{ParamOIDs: []uint32{
		pgtype.Int8ArrayOID, pgtype.TextArrayOID, pgtype.TimestamptzOID, pgtype.TimestamptzOID, pgtype.Int4OID, pgtype.TimestamptzOID,
	}}
	scalars := []any{timestamp(at), timestamp(at.Add(time.Hour)), int32(1), timestamp(at.Add(time.Hour))}
	sized := pgtype.NewMap()
	presizeArrays(sized)
	for _, c := range []struct {
		name string
		m    *pgtype.Map
		keys any
	}{
		{"pgx", pgtype.NewMap(), idsArg(keyType{kind: kindInt, bits: 64}, ids)},
		{"pgx-int64-keys", pgtype.NewMap(), array[int64](keys)},
		{"presized", sized, idsArg(keyType{kind: kindInt, bits: 64}, ids)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var eqb pgx.ExtendedQueryBuilder
			args := append([]any{c.keys, uids}, scalars...)
			for b.Loop() {
				if err := eqb.Build(c.m, sd, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
