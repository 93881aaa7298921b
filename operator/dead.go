package operator

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/refresher/refresher/internal/redact"
)

// DeadLetter is one entry of a kind's dead-letter list, as the poller wrote
// it (see docs/protocol.md, "Dead letters").
type DeadLetter struct {
	// ID names the entry for replay and discard: a hash of its exact text,
	// stable while it stays in the list.
	ID    string `json:"id"`
	Index int64  `json:"index"`
	Error string `json:"error"`
	List  string `json:"list,omitempty"`
	At    string `json:"at,omitempty"`
	// Message is the original message (cut to 4 KiB for display).
	Message   string `json:"message"`
	Truncated bool   `json:"truncated,omitempty"`
	// Replayable: the entry holds the whole original message, which replay
	// pushes back onto the output list.
	Replayable bool `json:"replayable"`
	// NotReplayable says why an entry cannot be replayed; "" when it can.
	NotReplayable string `json:"not_replayable,omitempty"`
}

type deadEntry struct {
	Error         string  `json:"error"`
	List          string  `json:"list"`
	Size          int     `json:"size"`
	SHA1          string  `json:"sha1"`
	Truncated     bool    `json:"truncated"`
	Message       *string `json:"message"`
	MessageBase64 string  `json:"message_base64"`
	At            string  `json:"at"`
}

// deadScan bounds how many entries replay and discard look through for the
// ids they are given (the oldest first).
const deadScan = 10_000

func deadID(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:8])
}

// notServiceDeadLetter is why an entry the service did not write cannot be
// replayed.
const notServiceDeadLetter = "not a dead letter the service wrote: replay is not possible"

// original returns the message a dead letter holds, exactly as the worker
// pushed it, and why it cannot be replayed ("" when it can): the entry is
// not a dead letter the service wrote, or it holds only the beginning of a
// message too long to keep whole. Replaying an excerpt would push a message
// the worker never sent (and lose the original's size and SHA-1).
func original(raw string) (e deadEntry, msg, why string) {
	if err := json.Unmarshal([]byte(raw), &e); err != nil || e.Message == nil {
		return e, "", notServiceDeadLetter
	}
	msg = *e.Message
	if e.MessageBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(e.MessageBase64)
		if err != nil {
			return e, "", notServiceDeadLetter
		}
		msg = string(b)
	}
	if e.Truncated || (e.Size > 0 && e.Size != len(msg)) {
		return e, msg, fmt.Sprintf("holds only the first %d of the message's %d bytes (SHA-1 %s): "+
			"replay would push that excerpt, not the result the worker sent; the worker must send it again, "+
			"under the kind's result size limit", len(msg), e.Size, e.SHA1)
	}
	return e, msg, ""
}

// parseDead returns the entry raw as the API and the dashboard show it: its
// URLs redacted (redact.Text), since a result may quote a URL with its
// password; replay pushes the original from Redis, not this.
func parseDead(raw string, index int64) DeadLetter {
	e, msg, why := original(raw)
	d := DeadLetter{ID: deadID(raw), Index: index, Error: redact.Text(e.Error), List: e.List, At: e.At, Replayable: why == "", NotReplayable: why}
	if why == notServiceDeadLetter {
		d.Error = why
		msg = raw
	}
	msg = redact.Text(msg)
	if len(msg) > 4096 {
		msg, d.Truncated = msg[:4096], true
	}
	d.Message = msg
	return d
}

func (s *Server) deadLetters(ctx context.Context, k *Kind, offset, limit int64) (total int64, items []DeadLetter, err error) {
	total, entries, err := s.admin(k).DeadLetters(ctx, k.Lists, offset, limit)
	if err != nil {
		return 0, nil, err
	}
	items = make([]DeadLetter, 0, len(entries))
	for i, raw := range entries {
		items = append(items, parseDead(raw, offset+int64(i)))
	}
	return total, items, nil
}

func (s *Server) apiDead(w http.ResponseWriter, r *http.Request, k *Kind) {
	offset, limit := int64(0), int64(50)
	for name, p := range map[string]*int64{"offset": &offset, "limit": &limit} {
		if v := r.URL.Query().Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || (name == "limit" && (n < 1 || n > 1000)) {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("%s=%q: use a number (limit 1 to 1000)", name, v))
				return
			}
			*p = n
		}
	}
	total, items, err := s.deadLetters(r.Context(), k, offset, limit)
	if err != nil {
		s.internal(w, "read the dead letters", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"list": k.Lists.Dead, "total": total, "items": items})
}

// DeadRequest is the body of POST .../dead/replay and .../dead/discard.
type DeadRequest struct {
	IDs []string `json:"ids"`
}

// DeadResult says what replay or discard did.
type DeadResult struct {
	Done int `json:"done"`
	// Missing are ids no longer in the list (or beyond its first 10000
	// entries); NotReplayable are entries without a whole original message,
	// and Why says, for each of them, what stops the replay.
	Missing       []string          `json:"missing"`
	NotReplayable []string          `json:"not_replayable,omitempty"`
	Why           map[string]string `json:"why,omitempty"`
}

func (s *Server) apiDeadReplay(w http.ResponseWriter, r *http.Request, k *Kind) {
	s.deadAction(w, r, k, "replay", func(ctx context.Context, raw string) (bool, string, error) {
		_, msg, why := original(raw)
		if why != "" {
			return false, why, nil
		}
		done, err := s.admin(k).ReplayDead(ctx, k.Lists, raw, msg)
		return done, "", err
	})
}

func (s *Server) apiDeadDiscard(w http.ResponseWriter, r *http.Request, k *Kind) {
	s.deadAction(w, r, k, "discard", func(ctx context.Context, raw string) (bool, string, error) {
		done, err := s.admin(k).DiscardDead(ctx, k.Lists, raw)
		return done, "", err
	})
}

// deadAction finds the entries named by the body's ids and applies fn to
// each; fn reports whether it did it, or why the entry does not allow it.
func (s *Server) deadAction(w http.ResponseWriter, r *http.Request, k *Kind, what string,
	fn func(ctx context.Context, raw string) (done bool, refused string, err error)) {
	var req DeadRequest
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if len(req.IDs) == 0 || len(req.IDs) > 1000 {
		writeError(w, http.StatusBadRequest, `ids: give 1 to 1000 dead-letter ids, as GET .../dead lists them: {"ids": ["..."]}`)
		return
	}
	ctx := r.Context()
	_, entries, err := s.admin(k).DeadLetters(ctx, k.Lists, 0, deadScan)
	if err != nil {
		s.internal(w, "read the dead letters", err)
		return
	}
	byID := make(map[string]string, len(entries))
	for _, raw := range entries {
		byID[deadID(raw)] = raw
	}
	res := DeadResult{Missing: []string{}}
	for _, id := range req.IDs {
		raw, ok := byID[id]
		if !ok {
			res.Missing = append(res.Missing, id)
			continue
		}
		done, refused, err := fn(ctx, raw)
		switch {
		case err != nil:
			s.internal(w, what+" dead letters", err)
			return
		case refused != "":
			res.NotReplayable = append(res.NotReplayable, id)
			if res.Why == nil {
				res.Why = map[string]string{}
			}
			res.Why[id] = refused
		case done:
			res.Done++
		default:
			res.Missing = append(res.Missing, id)
		}
	}
	s.o.Logger.Info("operator: dead letters "+what, "kind", k.Name, "by", actor(ctx), "done", res.Done)
	s.invalidate()
	writeJSON(w, http.StatusOK, res)
}
