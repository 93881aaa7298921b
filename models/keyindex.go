package models

import "sync"

// keyIndexes lends the maps from a key to its row's index that LastWins and
// SuccessRows build for every batch they see (1000 keys: a map of about
// 40 kB allocated, grown and dropped per save and per applied batch). Each
// borrower gives its map back before it returns, on the same goroutine
// and without blocking in between, so a sync.Pool's per-processor slot
// finds it again.
var keyIndexes = sync.Pool{New: func() any { return make(map[string]int) }}

// maxPooledKeys bounds the maps kept: one that grew past it (a batch far
// larger than MaxSaveBatch) is left to the garbage collector rather than
// cleared and kept at that size.
const maxPooledKeys = 4 * MaxSaveBatch

// borrowKeyIndex returns an empty map for a batch's keys; give it back
// with returnKeyIndex.
func borrowKeyIndex() map[string]int { return keyIndexes.Get().(map[string]int) }

// returnKeyIndex empties m (so that it keeps no key alive) and keeps it for
// the next borrowKeyIndex.
func returnKeyIndex(m map[string]int) {
	if len(m) > maxPooledKeys {
		return
	}
	clear(m)
	keyIndexes.Put(m)
}
