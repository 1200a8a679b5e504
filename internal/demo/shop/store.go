package shop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// store is the shop's data in SQLite. Reads go through a pool with one
// connection per worker, like a Rails connection pool sized to its threads;
// writes go through a single connection, so writers queue in Go instead of
// meeting SQLITE_BUSY and SQLite's sleeping busy handler. In WAL mode readers
// never wait for that writer.
//
// Every method that runs SQL first waits one simulated round trip per
// statement (see Options.DBLatency).
type store struct {
	read    *sql.DB
	write   *sql.DB
	latency time.Duration
}

type product struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	PriceCents  int64  `json:"price_cents"`
}

type cartLine struct {
	Product  product
	Quantity int64
}

// SubtotalCents is the line's price times its quantity.
func (l cartLine) SubtotalCents() int64 { return l.Product.PriceCents * l.Quantity }

type session struct {
	ID        string
	CSRFToken string
}

type user struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
}

type order struct {
	ID         int64
	Email      string
	ItemCount  int64
	TotalCents int64
}

// Number is the order number customers see, in Solidus' style.
func (o order) Number() string { return orderNumber(o.ID) }

func orderNumber(id int64) string { return fmt.Sprintf("R%09d", id) }

const schema = `
CREATE TABLE IF NOT EXISTS products (
	id          INTEGER PRIMARY KEY,
	name        TEXT    NOT NULL,
	description TEXT    NOT NULL,
	price_cents INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
	id         TEXT    PRIMARY KEY,
	csrf_token TEXT    NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS cart_items (
	session_id TEXT    NOT NULL REFERENCES sessions(id),
	product_id INTEGER NOT NULL REFERENCES products(id),
	quantity   INTEGER NOT NULL CHECK (quantity > 0),
	PRIMARY KEY (session_id, product_id)
);
CREATE TABLE IF NOT EXISTS orders (
	id          INTEGER PRIMARY KEY,
	email       TEXT    NOT NULL,
	session_id  TEXT    NOT NULL,
	item_count  INTEGER NOT NULL,
	total_cents INTEGER NOT NULL,
	created_at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS order_items (
	order_id    INTEGER NOT NULL REFERENCES orders(id),
	product_id  INTEGER NOT NULL REFERENCES products(id),
	quantity    INTEGER NOT NULL,
	price_cents INTEGER NOT NULL,
	PRIMARY KEY (order_id, product_id)
);
CREATE TABLE IF NOT EXISTS users (
	id            INTEGER PRIMARY KEY,
	email         TEXT    NOT NULL UNIQUE,
	password_hash TEXT    NOT NULL,
	created_at    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS api_tokens (
	token_hash TEXT    PRIMARY KEY,
	user_id    INTEGER NOT NULL REFERENCES users(id),
	created_at INTEGER NOT NULL
);
`

// openStore opens the database file at path, creating it and its tables if
// needed. readers is the size of the read pool.
func openStore(path string, readers int, latency time.Duration) (*store, error) {
	// The path is inside a "file:" URI, where these three are special.
	uri := "file:" + strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
	const common = "_busy_timeout=10000&_foreign_keys=1"
	write, err := sql.Open("sqlite", uri+"?"+common+"&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("shop: open database %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	st := &store{write: write, latency: latency}
	// Creating the tables also creates the file in WAL mode before any
	// reader opens it.
	if _, err := write.Exec(schema); err != nil {
		return nil, errors.Join(fmt.Errorf("shop: create tables in %s: %w", path, err), st.close())
	}
	st.read, err = sql.Open("sqlite", uri+"?"+common+"&_query_only=1")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("shop: open database %s: %w", path, err), st.close())
	}
	st.read.SetMaxOpenConns(readers)
	st.read.SetMaxIdleConns(readers)
	if err := st.read.Ping(); err != nil {
		return nil, errors.Join(fmt.Errorf("shop: open database %s for reading: %w", path, err), st.close())
	}
	return st, nil
}

func (st *store) close() error {
	var err error
	for _, db := range []*sql.DB{st.read, st.write} {
		if db != nil {
			if e := db.Close(); e != nil {
				err = errors.Join(err, fmt.Errorf("shop: close database: %w", e))
			}
		}
	}
	return err
}

// seed adds the products 1..n that are missing, so a reused data directory
// keeps its data. It waits no simulated latency.
func (st *store) seed(ctx context.Context, n int) error {
	tx, err := st.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("shop: seed products: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	insert, err := tx.PrepareContext(ctx,
		`INSERT OR IGNORE INTO products (id, name, description, price_cents) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("shop: seed products: %w", err)
	}
	defer insert.Close()
	for id := int64(1); id <= int64(n); id++ {
		p := seedProduct(id)
		if _, err := insert.ExecContext(ctx, p.ID, p.Name, p.Description, p.PriceCents); err != nil {
			return fmt.Errorf("shop: seed product %d: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("shop: seed products: %w", err)
	}
	return nil
}

// seedProduct invents product id, the same on every run.
func seedProduct(id int64) product {
	styles := []string{"Classic", "Vintage", "Organic", "Deluxe", "Compact", "Rugged", "Minimal"}
	things := []string{"Tote Bag", "Mug", "T-Shirt", "Hoodie", "Cap", "Notebook", "Water Bottle", "Sticker Pack", "Socks", "Backpack", "Poster"}
	style := styles[(id-1)%int64(len(styles))]
	thing := things[(id-1)%int64(len(things))]
	return product{
		ID:   id,
		Name: style + " " + thing,
		Description: fmt.Sprintf("Our %s %s, for everyday use: sturdy, comfortable and made to last. "+
			"Ships in two business days; free returns within 30 days.", strings.ToLower(style), strings.ToLower(thing)),
		PriceCents: 499 + (id*7919)%9500,
	}
}

// roundTrip waits the simulated database latency, or until ctx is done.
func (st *store) roundTrip(ctx context.Context) error {
	if st.latency <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(st.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (st *store) findSession(ctx context.Context, id string) (session, bool, error) {
	if err := st.roundTrip(ctx); err != nil {
		return session{}, false, err
	}
	sess := session{ID: id}
	err := st.read.QueryRowContext(ctx, `SELECT csrf_token FROM sessions WHERE id = ?`, id).Scan(&sess.CSRFToken)
	if errors.Is(err, sql.ErrNoRows) {
		return session{}, false, nil
	}
	if err != nil {
		return session{}, false, fmt.Errorf("find session: %w", err)
	}
	return sess, true, nil
}

func (st *store) createSession(ctx context.Context, sess session) error {
	if err := st.roundTrip(ctx); err != nil {
		return err
	}
	_, err := st.write.ExecContext(ctx, `INSERT INTO sessions (id, csrf_token, created_at) VALUES (?, ?, ?)`,
		sess.ID, sess.CSRFToken, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// featuredProductLimit bounds the home page, however many products exist.
const featuredProductLimit = 24

func (st *store) featuredProducts(ctx context.Context) ([]product, error) {
	return st.products(ctx, `SELECT id, name, description, price_cents FROM products ORDER BY id LIMIT ?`, featuredProductLimit)
}

// relatedProducts returns a few products near id, for the product page.
func (st *store) relatedProducts(ctx context.Context, id int64) ([]product, error) {
	return st.products(ctx, `SELECT id, name, description, price_cents FROM products
		WHERE id <> ? ORDER BY abs(id - ?), id LIMIT 4`, id, id)
}

func (st *store) products(ctx context.Context, query string, args ...any) ([]product, error) {
	if err := st.roundTrip(ctx); err != nil {
		return nil, err
	}
	rows, err := st.read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list products: %w", err)
	}
	defer rows.Close()
	var list []product
	for rows.Next() {
		var p product
		if err := rows.Scan(&p.ID, &p.Name, &p.Description, &p.PriceCents); err != nil {
			return nil, fmt.Errorf("list products: %w", err)
		}
		list = append(list, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list products: %w", err)
	}
	return list, nil
}

func (st *store) product(ctx context.Context, id int64) (product, bool, error) {
	if err := st.roundTrip(ctx); err != nil {
		return product{}, false, err
	}
	p := product{ID: id}
	err := st.read.QueryRowContext(ctx, `SELECT name, description, price_cents FROM products WHERE id = ?`, id).
		Scan(&p.Name, &p.Description, &p.PriceCents)
	if errors.Is(err, sql.ErrNoRows) {
		return product{}, false, nil
	}
	if err != nil {
		return product{}, false, fmt.Errorf("find product %d: %w", id, err)
	}
	return p, true, nil
}

// cartCount is the number of items in the session's cart, for the header.
func (st *store) cartCount(ctx context.Context, sessionID string) (int64, error) {
	if err := st.roundTrip(ctx); err != nil {
		return 0, err
	}
	var n int64
	err := st.read.QueryRowContext(ctx, `SELECT COALESCE(SUM(quantity), 0) FROM cart_items WHERE session_id = ?`, sessionID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count cart items: %w", err)
	}
	return n, nil
}

// maxQuantity bounds one cart line.
const maxQuantity = 99

func (st *store) addToCart(ctx context.Context, sessionID string, productID, quantity int64) error {
	if err := st.roundTrip(ctx); err != nil {
		return err
	}
	_, err := st.write.ExecContext(ctx, `INSERT INTO cart_items (session_id, product_id, quantity) VALUES (?, ?, ?)
		ON CONFLICT (session_id, product_id) DO UPDATE SET quantity = min(quantity + excluded.quantity, ?)`,
		sessionID, productID, quantity, maxQuantity)
	if err != nil {
		return fmt.Errorf("add product %d to cart: %w", productID, err)
	}
	return nil
}

func (st *store) cartLines(ctx context.Context, sessionID string) ([]cartLine, error) {
	if err := st.roundTrip(ctx); err != nil {
		return nil, err
	}
	rows, err := st.read.QueryContext(ctx, `SELECT p.id, p.name, p.description, p.price_cents, c.quantity
		FROM cart_items c JOIN products p ON p.id = c.product_id
		WHERE c.session_id = ? ORDER BY p.id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("read cart: %w", err)
	}
	defer rows.Close()
	var lines []cartLine
	for rows.Next() {
		var l cartLine
		if err := rows.Scan(&l.Product.ID, &l.Product.Name, &l.Product.Description, &l.Product.PriceCents, &l.Quantity); err != nil {
			return nil, fmt.Errorf("read cart: %w", err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cart: %w", err)
	}
	return lines, nil
}

// placeOrder turns the session's cart into an order and empties the cart, in
// one transaction. ok is false when the cart was empty.
//
// The three statements' round trips are waited before the transaction, so
// the simulated latency never holds SQLite's only write lock (see store).
func (st *store) placeOrder(ctx context.Context, sessionID, email string) (o order, ok bool, err error) {
	for range 3 {
		if err := st.roundTrip(ctx); err != nil {
			return order{}, false, err
		}
	}
	tx, err := st.write.BeginTx(ctx, nil)
	if err != nil {
		return order{}, false, fmt.Errorf("place order: %w", err)
	}
	defer tx.Rollback() // a no-op after Commit
	o.Email = email
	err = tx.QueryRowContext(ctx, `INSERT INTO orders (email, session_id, item_count, total_cents, created_at)
		SELECT ?, ?, SUM(c.quantity), SUM(c.quantity * p.price_cents), ?
		FROM cart_items c JOIN products p ON p.id = c.product_id
		WHERE c.session_id = ?
		HAVING COUNT(*) > 0
		RETURNING id, item_count, total_cents`, email, sessionID, time.Now().Unix(), sessionID).
		Scan(&o.ID, &o.ItemCount, &o.TotalCents)
	if errors.Is(err, sql.ErrNoRows) {
		return order{}, false, nil
	}
	if err != nil {
		return order{}, false, fmt.Errorf("place order: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO order_items (order_id, product_id, quantity, price_cents)
		SELECT ?, c.product_id, c.quantity, p.price_cents
		FROM cart_items c JOIN products p ON p.id = c.product_id
		WHERE c.session_id = ?`, o.ID, sessionID); err != nil {
		return order{}, false, fmt.Errorf("place order %s: copy items: %w", o.Number(), err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM cart_items WHERE session_id = ?`, sessionID); err != nil {
		return order{}, false, fmt.Errorf("place order %s: empty cart: %w", o.Number(), err)
	}
	if err := tx.Commit(); err != nil {
		return order{}, false, fmt.Errorf("place order %s: %w", o.Number(), err)
	}
	return o, true, nil
}

// createUser stores a new user; ok is false when the email is taken.
func (st *store) createUser(ctx context.Context, email string, passwordHash []byte) (id int64, ok bool, err error) {
	if err := st.roundTrip(ctx); err != nil {
		return 0, false, err
	}
	err = st.write.QueryRowContext(ctx, `INSERT INTO users (email, password_hash, created_at) VALUES (?, ?, ?)
		ON CONFLICT (email) DO NOTHING RETURNING id`, email, string(passwordHash), time.Now().Unix()).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("create user: %w", err)
	}
	return id, true, nil
}

func (st *store) userByEmail(ctx context.Context, email string) (u user, passwordHash []byte, ok bool, err error) {
	if err := st.roundTrip(ctx); err != nil {
		return user{}, nil, false, err
	}
	var hash string
	err = st.read.QueryRowContext(ctx, `SELECT id, email, password_hash FROM users WHERE email = ?`, email).
		Scan(&u.ID, &u.Email, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return user{}, nil, false, nil
	}
	if err != nil {
		return user{}, nil, false, fmt.Errorf("find user: %w", err)
	}
	return u, []byte(hash), true, nil
}

func (st *store) createToken(ctx context.Context, userID int64, tokenHash string) error {
	if err := st.roundTrip(ctx); err != nil {
		return err
	}
	_, err := st.write.ExecContext(ctx, `INSERT INTO api_tokens (token_hash, user_id, created_at) VALUES (?, ?, ?)`,
		tokenHash, userID, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("create API token: %w", err)
	}
	return nil
}

func (st *store) userByToken(ctx context.Context, tokenHash string) (user, bool, error) {
	if err := st.roundTrip(ctx); err != nil {
		return user{}, false, err
	}
	var u user
	err := st.read.QueryRowContext(ctx, `SELECT u.id, u.email FROM api_tokens t JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = ?`, tokenHash).Scan(&u.ID, &u.Email)
	if errors.Is(err, sql.ErrNoRows) {
		return user{}, false, nil
	}
	if err != nil {
		return user{}, false, fmt.Errorf("find API token: %w", err)
	}
	return u, true, nil
}
