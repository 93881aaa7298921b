package redisio

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/refresher/refresher/internal/jsontext"
)

// ExcerptBytes is how much of a message a dead letter keeps: at most its
// first 4 KiB (a few bytes less when the cut would split a UTF-8 character,
// and less when JSON escapes would make it long, see excerptJSONBytes). The
// size and the SHA-1 of the whole message are kept too, so that a dead
// letter stays small whatever a worker pushed and still tells identical
// messages apart.
const ExcerptBytes = 4 << 10

// maxOversizedPerFetch bounds the oversized bytes one fetch script copies
// and hashes inside Redis (about 5 ms per MB, during which Redis serves no
// other client); a fetch stops after the oversized message that reaches it.
// A single message larger than this is still handled alone, in one fetch.
const maxOversizedPerFetch = 16 << 20

// stubPrefix starts the stub that takes the place of an oversized message in
// the processing list (see fetchScript): "<size> <sha1 hex> <excerpt>"
// follows. A worker that pushes such a text only gets it dead-lettered.
const stubPrefix = "\x00refresher:oversized\x00"

// parseStub reads a stub; ok is false when s is not one.
func parseStub(s string) (size int, sum, excerpt string, ok bool) {
	rest, ok := strings.CutPrefix(s, stubPrefix)
	if !ok {
		return 0, "", "", false
	}
	sizeText, rest, ok1 := strings.Cut(rest, " ")
	sum, excerpt, ok2 := strings.Cut(rest, " ")
	size, err := strconv.Atoi(sizeText)
	if !ok1 || !ok2 || err != nil || len(sum) != 40 {
		return 0, "", "", false
	}
	return size, sum, excerpt, true
}

// excerptJSONBytes bounds what a message's excerpt takes in its dead letter
// as written: "message" with its JSON escapes, plus "message_base64" when
// the excerpt is not valid UTF-8. An excerpt of plain text is ExcerptBytes
// long; one of control characters or invalid bytes (6 bytes each once
// escaped) is shorter.
const excerptJSONBytes = 5 << 10

// errorJSONBytes bounds the error text of a dead letter as written.
const errorJSONBytes = 1 << 10

// AppendDeadLetter appends the dead-letter list entry of m, a message of
// the output list named list that cannot be applied, to dst:
//
//	{"error":"<m.Err>","list":"<output list>","size":1234,"sha1":"<hex SHA-1 of the whole message>",
//	 "truncated":false,"message":"<the message, or its first 4 KiB>","at":"2026-11-21T14:00:00Z"}
//
// size is the length of the whole message in bytes and truncated says
// whether message holds only its beginning: at most ExcerptBytes, and less
// when its escapes would make it longer than excerptJSONBytes as written.
// "message_base64" (the same excerpt in base64) follows "message" when the
// excerpt is not valid UTF-8, since a JSON string cannot hold it exactly
// (message then has U+FFFD for each invalid byte); it counts toward the
// same bound. The error text is cut to errorJSONBytes as written. An entry
// is therefore at most about 6.3 KiB plus the list's name, whatever the
// message and its size.
func AppendDeadLetter(dst []byte, m Message, list, at string) []byte {
	size, sum := m.Size, m.sha1
	if size < len(m.Raw) {
		size = len(m.Raw)
	}
	if sum == "" {
		h := sha1.Sum(m.Raw)
		sum = hex.EncodeToString(h[:])
	}
	ex := fitJSON(excerpt(m.Raw), excerptJSONBytes, true)
	b := append(dst, `{"error":`...)
	b = jsontext.AppendString(b, string(fitJSON([]byte(m.Err.Error()), errorJSONBytes, false)))
	b = append(b, `,"list":`...)
	b = jsontext.AppendString(b, list)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, `,"sha1":"`...)
	b = append(b, sum...)
	b = append(b, `","truncated":`...)
	b = strconv.AppendBool(b, len(ex) < size)
	b = append(b, `,"message":`...)
	b = jsontext.AppendString(b, string(ex))
	if !utf8.Valid(ex) {
		b = append(b, `,"message_base64":"`...)
		b = base64.StdEncoding.AppendEncode(b, ex)
		b = append(b, '"')
	}
	b = append(b, `,"at":`...)
	b = jsontext.AppendString(b, at)
	return append(b, '}')
}

// fitJSON returns the longest beginning of s, cut between characters,
// whose JSON string (as jsontext.AppendString writes it, quotes excluded)
// takes at most budget bytes; with base64, an invalid UTF-8 beginning also
// pays for its base64 copy.
func fitJSON(s []byte, budget int, base64Too bool) []byte {
	written, valid := 0, true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRune(s[i:])
		cost := n
		switch {
		case r == utf8.RuneError && n == 1:
			cost, valid = 6, false // \ufffd
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
			cost = 2
		case r < 0x20 || r == '\u2028' || r == '\u2029':
			cost = 6
		}
		need := written + cost
		if base64Too && !valid {
			need += base64.StdEncoding.EncodedLen(i + n)
		}
		if need > budget {
			return s[:i]
		}
		written += cost
		i += n
	}
	return s
}

// excerpt returns the first ExcerptBytes of raw, cut before a UTF-8
// character that the cut would split.
func excerpt(raw []byte) []byte {
	if len(raw) <= ExcerptBytes {
		return raw
	}
	cut := ExcerptBytes
	for i := 0; i < utf8.UTFMax-1 && cut > 0 && raw[cut]&0xC0 == 0x80; i++ {
		cut--
	}
	return raw[:cut]
}
