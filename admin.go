package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sensorreadings/readings/apperr"
	"github.com/sensorreadings/readings/store"
)

const adminUsage = `usage:
  readings admin bootstrap --org NAME --email EMAIL [--name NAME]
  readings admin user add --org-id N --email EMAIL --role viewer|editor|admin|owner [--name NAME]
  readings admin token create --email EMAIL [--name NAME] [--expires-in DURATION]
  readings admin token revoke --token-id N
  readings admin demo [--token-file FILE]

Each command needs DATABASE_URL (or --database-url), applies pending
migrations first, and prints one JSON object on stdout.`

// adminCommand declares a command's flags on fs and returns what it does,
// with the names of the flags it cannot do without.
type adminCommand func(fs *flag.FlagSet) (run adminRun, required []string)

type adminRun func(ctx context.Context, db *store.DB) (any, error)

// admin runs the operator's commands: the ones that create what the API
// needs a token for in the first place.
func admin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	commands := map[string]adminCommand{
		"bootstrap":    adminBootstrap,
		"user add":     adminUserAdd,
		"token create": adminTokenCreate,
		"token revoke": adminTokenRevoke,
		"demo":         adminDemo,
	}
	name, rest := "", args
	for _, words := range []int{1, 2} {
		if len(args) >= words && commands[strings.Join(args[:words], " ")] != nil {
			name, rest = strings.Join(args[:words], " "), args[words:]
		}
	}
	if name == "" {
		fmt.Fprintln(stderr, adminUsage)
		return fmt.Errorf("unknown admin command %q", strings.Join(args, " "))
	}

	fs := flag.NewFlagSet("readings admin "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	databaseURL := fs.String("database-url", getenv("DATABASE_URL"), "PostgreSQL `url` (DATABASE_URL)")
	run, required := commands[name](fs)
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var missing []string
	for _, flagName := range append([]string{"database-url"}, required...) {
		if v := fs.Lookup(flagName).Value.String(); v == "" || v == "0" {
			missing = append(missing, "--"+flagName)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s needs %s", name, strings.Join(missing, ", "))
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	pool, err := store.Open(ctx, *databaseURL, store.PoolConfig{MaxConns: 2})
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := store.Migrate(ctx, pool, log); err != nil {
		return err
	}
	out, err := run(ctx, store.New(pool))
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(out)
}

func adminBootstrap(fs *flag.FlagSet) (adminRun, []string) {
	orgName := fs.String("org", "", "the organization's `name`")
	email := fs.String("email", "", "the owner's `email`")
	name := fs.String("name", "", "the owner's `name`, when the user is new")
	return func(ctx context.Context, db *store.DB) (any, error) {
		org, err := db.CreateOrg(ctx, *orgName)
		if err != nil {
			return nil, err
		}
		user, token, err := addUser(ctx, db, org.ID, *email, *name, store.Owner)
		if err != nil {
			return nil, err
		}
		return map[string]any{"org_id": org.ID, "user_id": user.ID, "token": token}, nil
	}, []string{"org", "email"}
}

func adminUserAdd(fs *flag.FlagSet) (adminRun, []string) {
	orgID := fs.Int64("org-id", 0, "the organization's `id`")
	email := fs.String("email", "", "the user's `email`")
	role := fs.String("role", "", "the user's `role`: viewer, editor, admin or owner")
	name := fs.String("name", "", "the user's `name`, when the user is new")
	return func(ctx context.Context, db *store.DB) (any, error) {
		if !store.Role(*role).Valid() {
			return nil, fmt.Errorf("role %q is none of viewer, editor, admin, owner", *role)
		}
		user, token, err := addUser(ctx, db, *orgID, *email, *name, store.Role(*role))
		if err != nil {
			return nil, err
		}
		return map[string]any{"user_id": user.ID, "token": token}, nil
	}, []string{"org-id", "email", "role"}
}

// addUser creates or reuses the user with email, gives them role in orgID
// and issues them a token.
func addUser(ctx context.Context, db *store.DB, orgID int64, email, name string, role store.Role) (store.User, string, error) {
	user, err := db.EnsureUser(ctx, email, name)
	if err != nil {
		return store.User{}, "", err
	}
	if err := db.SetMembership(ctx, orgID, user.ID, role); err != nil {
		if apperr.CodeOf(err) == apperr.Invalid {
			return store.User{}, "", fmt.Errorf("organization %d does not exist", orgID)
		}
		return store.User{}, "", err
	}
	_, secret, err := db.CreateToken(ctx, user.ID, "admin cli", nil)
	return user, secret, err
}

func adminTokenCreate(fs *flag.FlagSet) (adminRun, []string) {
	email := fs.String("email", "", "the user's `email`")
	name := fs.String("name", "admin cli", "the token's `name`")
	expiresIn := fs.Duration("expires-in", 0, "how long until the token expires, such as 720h (default never)")
	return func(ctx context.Context, db *store.DB) (any, error) {
		var expiresAt *time.Time
		if *expiresIn < 0 {
			return nil, fmt.Errorf("--expires-in %v is negative", *expiresIn)
		}
		if *expiresIn > 0 {
			t := time.Now().Add(*expiresIn)
			expiresAt = &t
		}
		user, err := db.UserByEmail(ctx, *email)
		if err != nil {
			return nil, err
		}
		token, secret, err := db.CreateToken(ctx, user.ID, *name, expiresAt)
		if err != nil {
			return nil, err
		}
		return map[string]any{"token_id": token.ID, "token": secret}, nil
	}, []string{"email"}
}

func adminTokenRevoke(fs *flag.FlagSet) (adminRun, []string) {
	tokenID := fs.Int64("token-id", 0, "the token's `id`")
	return func(ctx context.Context, db *store.DB) (any, error) {
		if err := db.RevokeToken(ctx, 0, *tokenID); err != nil {
			return nil, err
		}
		return map[string]any{"revoked": true}, nil
	}, []string{"token-id"}
}

// The demo that `make run` sets up on an empty database.
const (
	demoOrg     = "Demo organization"
	demoEmail   = "demo@example.com"
	demoProject = "Demo project"
	// The demo owner's one token: replaced, never added to.
	demoTokenName = "make run"
)

// adminDemo gives `make run` something to show: on an empty database a demo
// organization, owner and project; on the demo's own database the demo
// owner's token. It refuses to touch a database that holds other data.
//
// With --token-file the token outlives a restart: the file's token is
// answered again while it still signs the demo owner in, so the TOKEN
// printed before and a console signed in with it keep working; otherwise
// (a first start, another database, a revoked token) the token is replaced
// and the file rewritten, readable by its owner only. Without the file the
// secret could not be printed again: the database keeps only its hash.
func adminDemo(fs *flag.FlagSet) (adminRun, []string) {
	tokenFile := fs.String("token-file", "", "a `file` keeping the demo owner's token across starts")
	return func(ctx context.Context, db *store.DB) (any, error) {
		out, err := runDemo(ctx, db, *tokenFile)
		if err != nil || *tokenFile == "" || out["kept"] == true {
			return out, err
		}
		if err := os.WriteFile(*tokenFile, []byte(out["token"].(string)+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("keep the demo token: %w", err)
		}
		return out, nil
	}, nil
}

func runDemo(ctx context.Context, db *store.DB, tokenFile string) (map[string]any, error) {
	user, err := db.UserByEmail(ctx, demoEmail)
	switch {
	case apperr.CodeOf(err) == apperr.NotFound:
		return createDemo(ctx, db)
	case err != nil:
		return nil, err
	}
	_, memberships, err := db.Me(ctx, user.ID)
	if err != nil || len(memberships) == 0 {
		return nil, fmt.Errorf("%s has no organization; use readings admin bootstrap", demoEmail)
	}
	orgID := memberships[0].OrgID
	projects, _, err := db.ListProjects(ctx, orgID, 0, 1)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"org_id": orgID, "user_id": user.ID, "created": false, "kept": false}
	if len(projects) > 0 {
		out["project_id"] = projects[0].ID
	}
	if secret := keptToken(ctx, db, tokenFile, user.ID); secret != "" {
		out["token"], out["kept"] = secret, true
		return out, nil
	}
	if _, out["token"], err = db.ReplaceToken(ctx, user.ID, demoTokenName); err != nil {
		return nil, err
	}
	return out, nil
}

// keptToken is the token of file when it still signs userID in, else "".
func keptToken(ctx context.Context, db *store.DB, file string, userID int64) string {
	if file == "" {
		return ""
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	secret := strings.TrimSpace(string(b))
	if !store.WellFormedToken(secret) {
		return ""
	}
	if p, err := db.Authenticate(ctx, secret, 0); err != nil || p.UserID != userID {
		return ""
	}
	return secret
}

func createDemo(ctx context.Context, db *store.DB) (map[string]any, error) {
	empty, err := db.Empty(ctx)
	if err != nil {
		return nil, err
	}
	if !empty {
		return nil, fmt.Errorf("the database holds organizations but no %s; create a token with readings admin token create", demoEmail)
	}
	org, err := db.CreateOrg(ctx, demoOrg)
	if err != nil {
		return nil, err
	}
	user, err := db.EnsureUser(ctx, demoEmail, "Demo owner")
	if err != nil {
		return nil, err
	}
	if err := db.SetMembership(ctx, org.ID, user.ID, store.Owner); err != nil {
		return nil, err
	}
	_, secret, err := db.ReplaceToken(ctx, user.ID, demoTokenName)
	if err != nil {
		return nil, err
	}
	project, err := db.CreateProject(ctx, org.ID, demoProject, "Created by make run")
	if err != nil {
		return nil, err
	}
	return map[string]any{"org_id": org.ID, "user_id": user.ID, "project_id": project.ID, "token": secret, "created": true, "kept": false}, nil
}
