package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/refresher/refresher/config"
	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/models/stores"
)

// databases are the stores of the configured kinds: one per distinct
// database URL (config.Config.Databases), shared by the kinds on it, each
// with its own pool of max_connections.
type databases struct {
	c     *config.Config
	byURL map[string]models.Store
	order []string // URLs, in the order of their first kind
}

// openDatabases opens and pings the database of every kind of c, each URL
// once; on an error it closes those it opened. An error names the kinds of
// the database that failed when there are several.
func openDatabases(ctx context.Context, c *config.Config, o stores.Options) (*databases, error) {
	o.MaxConnections = c.MaxConnections
	d := &databases{c: c, byURL: map[string]models.Store{}}
	urls := c.Databases()
	for _, url := range urls {
		s, err := stores.Open(ctx, url, o)
		if err != nil {
			d.Close()
			if len(urls) > 1 {
				return nil, fmt.Errorf("database of kinds %s: %w", strings.Join(d.kindsOn(url), ", "), err)
			}
			return nil, err
		}
		d.byURL[url] = s
		d.order = append(d.order, url)
	}
	return d, nil
}

// kindsOn names the kinds whose database is url.
func (d *databases) kindsOn(url string) []string {
	var names []string
	for i := range d.c.Kinds {
		if d.c.KindDatabase(&d.c.Kinds[i]) == url {
			names = append(names, d.c.Kinds[i].Name)
		}
	}
	return names
}

// Of is the store of kind k.
func (d *databases) Of(k *config.Kind) models.Store { return d.byURL[d.c.KindDatabase(k)] }

// Close closes every store.
func (d *databases) Close() error {
	var errs []error
	for _, url := range d.order {
		errs = append(errs, d.byURL[url].Close())
	}
	return errors.Join(errs...)
}

// openKindDatabase opens and pings the database of kind k alone, for a
// command on one kind (enable, trigger, pause, resume).
func openKindDatabase(ctx context.Context, c *config.Config, k *config.Kind, o stores.Options) (models.Store, error) {
	o.MaxConnections = c.MaxConnections
	s, err := stores.Open(ctx, c.KindDatabase(k), o)
	if err != nil && k.Database != "" {
		return nil, fmt.Errorf("database of kind %s: %w", k.Name, err)
	}
	return s, err
}
