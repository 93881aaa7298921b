// Package models is refresher's view of the application's tables, the same
// for every database: the refresh columns (Columns) as a GORM struct an
// application can embed (Refresh), a kind's table (Table) and one model
// (Row), and the interfaces each driver implements (Store, Tx, Inspector).
//
// The drivers live in their own packages (models/mysqlstore, ...) and
// models/stores opens the one a database URL names. Package refresher
// imports none of them: it talks to the database only through Store.
package models
