package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/refresher/refresher/redisio"
)

// A dead letter that holds only the excerpt of an oversized result is not
// replayed (the excerpt is not what the worker sent), and the answer and the
// listing say why.
func TestDeadLetterExcerptNotReplayed(t *testing.T) {
	f := newFixture(t, map[string]string{"ops": testToken})
	ctx := context.Background()
	f.rdb.Del(ctx, f.kind.Lists.Dead)
	big := `{"uid":"ok-1","attempt_uid":"a","type":"success","pad":"` + strings.Repeat("p", 100<<10) + `"}`
	entry := redisio.AppendDeadLetter(nil, redisio.Message{Raw: []byte(big[:redisio.ExcerptBytes+1]), Size: len(big),
		Err: errors.New("invalid result: message is too long")}, f.kind.Lists.Output, "2026-03-04T13:00:00Z")
	f.rdb.RPush(ctx, f.kind.Lists.Dead, entry)

	var got struct{ Items []DeadLetter }
	if st := f.do("GET", "/api/v1/kinds/items/dead", "", nil, &got); st != 200 || len(got.Items) != 1 {
		t.Fatalf("dead: %d %+v", st, got)
	}
	d := got.Items[0]
	if d.Replayable || !strings.Contains(d.NotReplayable, fmt.Sprintf("holds only the first 4096 of the message's %d bytes", len(big))) {
		t.Fatalf("listed as replayable %v: %q", d.Replayable, d.NotReplayable)
	}
	var r DeadResult
	if st := f.do("POST", "/api/v1/kinds/items/dead/replay", testToken, DeadRequest{IDs: []string{d.ID}}, &r); st != 200 ||
		r.Done != 0 || len(r.NotReplayable) != 1 || !strings.Contains(r.Why[d.ID], "replay would push that excerpt") {
		t.Fatalf("replay: %d %+v", st, r)
	}
	if n := f.rdb.LLen(ctx, f.kind.Lists.Output).Val(); n != 0 {
		t.Fatalf("the excerpt was pushed: output list has %d", n)
	}
	if n := f.rdb.LLen(ctx, f.kind.Lists.Dead).Val(); n != 1 {
		t.Fatalf("the dead letter is gone: dead list has %d", n)
	}
	resp, err := http.Get(f.http.URL + "/kinds/items/dead")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "Not replayable: holds only the first 4096") || strings.Contains(string(page), ">Replay</button>") {
		t.Fatalf("the page offers a replay or does not say why not:\n%s", page)
	}
}

// The API shows a dead letter's URLs redacted; replay still pushes the
// message exactly as the worker sent it.
func TestDeadLetterShownRedacted(t *testing.T) {
	f := newFixture(t, map[string]string{"ops": testToken})
	ctx := context.Background()
	f.rdb.Del(ctx, f.kind.Lists.Dead)
	msg := `{"uid":"ok-1","type":"failure","reason":"GET http://user:S3cretUrlPw1@h/a.csv?token=S3cretUrlPw2: HTTP 500"}`
	entry := redisio.AppendDeadLetter(nil, redisio.Message{Raw: []byte(msg), Err: errors.New(`invalid result: "attempt_uid" is missing`)},
		f.kind.Lists.Output, "2026-03-04T13:00:00Z")
	f.rdb.RPush(ctx, f.kind.Lists.Dead, entry)

	var got struct{ Items []DeadLetter }
	if st := f.do("GET", "/api/v1/kinds/items/dead", "", nil, &got); st != 200 || len(got.Items) != 1 {
		t.Fatalf("dead: %d %+v", st, got)
	}
	d := got.Items[0]
	if strings.Contains(d.Message, "S3cretUrlPw") || !strings.Contains(d.Message, "http://xxxxx@h/a.csv?token=xxxxx") || !d.Replayable {
		t.Fatalf("listed as %+v", d)
	}
	var r DeadResult
	if st := f.do("POST", "/api/v1/kinds/items/dead/replay", testToken, DeadRequest{IDs: []string{d.ID}}, &r); st != 200 || r.Done != 1 {
		t.Fatalf("replay: %d %+v", st, r)
	}
	if out := f.rdb.LRange(ctx, f.kind.Lists.Output, 0, -1).Val(); len(out) != 1 || out[0] != msg {
		t.Fatalf("replay pushed %q, want the original", out)
	}
}
