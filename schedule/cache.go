package schedule

import "sync"

// Cache remembers parsed schedules by text, so that rows sharing a rule are
// parsed once. It is safe for concurrent use: the service's dispatcher and
// poller of a kind share one, so that the poller finds the rules of the
// rows it applies already parsed by the dispatcher that started them. A
// parse runs outside the cache's lock.
//
// It holds at most its size in entries (texts longer than maxCachedText are
// never kept, so a few huge texts cannot fill memory). When full, it is
// emptied and starts again: a row set that uses more distinct rules than
// that parses them on every pass, which costs time but stays correct.
type Cache struct {
	size int
	mu   sync.Mutex
	m    map[string]cacheEntry
}

// maxCachedText is the longest text a Cache keeps, in bytes.
const maxCachedText = 4096

type cacheEntry struct {
	s   *Schedule
	err error
}

// NewCache returns an empty cache of at most size entries (at least 1).
func NewCache(size int) *Cache {
	return &Cache{size: max(size, 1), m: make(map[string]cacheEntry)}
}

// Parse is the package's Parse, remembered by text, errors included.
func (c *Cache) Parse(text string) (*Schedule, error) {
	c.mu.Lock()
	e, ok := c.m[text]
	c.mu.Unlock()
	if ok {
		return e.s, e.err
	}
	s, err := parse(text)
	if len(text) <= maxCachedText {
		c.mu.Lock()
		if len(c.m) >= c.size {
			clear(c.m)
		}
		c.m[text] = cacheEntry{s, err}
		c.mu.Unlock()
	}
	return s, err
}

// Has reports whether the cache holds text, so that Parse(text) returns
// at once without parsing.
func (c *Cache) Has(text string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.m[text]
	return ok
}
