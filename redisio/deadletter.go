package redisio

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"unicode/utf8"

	"github.com/refresher/refresher/internal/jsontext"
)

// ExcerptBytes is how much of a message a dead letter keeps: its first
// 4 KiB (a few bytes less when the cut would split a UTF-8 character). The
// size and the SHA-1 of the whole message are kept too, so that a dead
// letter stays small whatever a worker pushed and still tells identical
// messages apart.
const ExcerptBytes = 4 << 10

// maxOversizedPerFetch bounds the oversized bytes one fetch script copies
// and hashes inside Redis (about 5 ms per MB, during which Redis serves no
// other client); a fetch stops after the oversized message that reaches it.
// A single message larger than this is still handled alone, in one fetch.
const maxOversizedPerFetch = 16 << 20

// AppendDeadLetter appends the dead-letter list entry of m, a message of
// the output list named list that cannot be applied, to dst:
//
//	{"error":"<m.Err>","list":"<output list>","size":1234,"sha1":"<hex SHA-1 of the whole message>",
//	 "truncated":false,"message":"<the message, or its first 4 KiB>","at":"2026-11-21T14:00:00Z"}
//
// size is the length of the whole message in bytes and truncated says
// whether message holds only its first ExcerptBytes. "message_base64" (the
// same excerpt in base64) follows "message" when the excerpt is not valid
// UTF-8, since a JSON string cannot hold it exactly (message then has U+FFFD
// for each invalid byte). An entry is therefore at most about 25 KiB (4 KiB
// of control characters, each escaped in 6 bytes) plus the error text,
// whatever the size of the message.
func AppendDeadLetter(dst []byte, m Message, list, at string) []byte {
	size, sum := m.Size, m.sha1
	if size < len(m.Raw) {
		size = len(m.Raw)
	}
	if sum == "" {
		h := sha1.Sum(m.Raw)
		sum = hex.EncodeToString(h[:])
	}
	ex := excerpt(m.Raw)
	b := append(dst, `{"error":`...)
	b = jsontext.AppendString(b, m.Err.Error())
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
