package objstore

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Location is a parsed --snapshots value: a local directory, or a bucket
// and a prefix on an S3-compatible server.
type Location struct {
	Dir    string // the directory, when Bucket is ""
	Bucket string
	Prefix string // "" or segments without a leading or trailing '/'
}

// IsS3 reports whether the location is on an S3-compatible server.
func (l Location) IsS3() bool { return l.Bucket != "" }

// String is the location as ParseLocation reads it back.
func (l Location) String() string {
	if l.IsS3() {
		if l.Prefix == "" {
			return "s3://" + l.Bucket
		}
		return "s3://" + l.Bucket + "/" + l.Prefix
	}
	return l.Dir
}

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// ParseLocation reads a --snapshots value:
//
//	/srv/snapshots, ./snapshots   a local directory
//	file:///srv/snapshots         the same, as a URL (absolute paths only)
//	s3://bucket                   a bucket's top level
//	s3://bucket/prefix/path       under a prefix in the bucket
//
// Anything else is an error wrapping ErrBadLocation: another scheme, a URL
// with a query, a fragment, user information or a port, a bucket name S3
// does not allow, or a prefix with empty, "." or ".." segments.
func ParseLocation(s string) (Location, error) {
	bad := func(format string, a ...any) (Location, error) {
		return Location{}, fmt.Errorf("%w %q: %s", ErrBadLocation, s, fmt.Sprintf(format, a...))
	}
	if s == "" {
		return bad("empty")
	}
	if strings.ContainsRune(s, 0) {
		return bad("holds a NUL byte")
	}
	if !schemeRE.MatchString(s) {
		return Location{Dir: filepath.Clean(s)}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad("%v", err)
	}
	if !strings.HasPrefix(s[len(u.Scheme)+1:], "//") {
		return bad("a URL is written %s://... (a local directory with a colon in its name: ./%s)", u.Scheme, s)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil || u.Port() != "" {
		return bad("no query, fragment, user or port")
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return bad("file URLs name a local path: file:///dir")
		}
		if u.Path == "" || u.Path == "/" {
			return bad("no directory")
		}
		return Location{Dir: filepath.Clean(u.Path)}, nil
	case "s3":
		if err := checkBucket(u.Host); err != nil {
			return bad("%v", err)
		}
		prefix := strings.TrimSuffix(strings.TrimPrefix(u.Path, "/"), "/")
		if prefix != "" {
			if err := checkKey(prefix); err != nil {
				return bad("prefix: %v", err)
			}
		}
		return Location{Bucket: u.Host, Prefix: prefix}, nil
	default:
		return bad("unknown scheme %q: use a directory, file:///dir or s3://bucket/prefix", u.Scheme)
	}
}

// Open returns the Store at the location. A local directory is used as it
// is; an S3 location is configured from the environment that getenv reads
// (nil: the process's own; see the package doc for the variables).
func (l Location) Open(getenv func(string) string) (Store, error) {
	if !l.IsS3() {
		return NewDir(l.Dir)
	}
	cfg, err := S3ConfigFromEnv(l, getenv)
	if err != nil {
		return nil, err
	}
	return NewS3(cfg)
}

// S3ConfigFromEnv fills an S3Config for the location from the standard
// AWS variables (and MAPTHENET_S3_URL_STYLE): see the package doc.
func S3ConfigFromEnv(l Location, getenv func(string) string) (S3Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	first := func(names ...string) string {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return v
			}
		}
		return ""
	}
	cfg := S3Config{
		Bucket:          l.Bucket,
		Prefix:          l.Prefix,
		Endpoint:        first("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		Region:          first("AWS_REGION", "AWS_DEFAULT_REGION"),
		URLStyle:        first("MAPTHENET_S3_URL_STYLE"),
		AccessKeyID:     first("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: first("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    first("AWS_SESSION_TOKEN"),
		CABundle:        first("AWS_CA_BUNDLE"),
	}
	if cfg.Endpoint != "" {
		if _, err := parseEndpoint(cfg.Endpoint); err != nil {
			return S3Config{}, err
		}
	}
	switch cfg.URLStyle {
	case "", "path", "virtual":
	default:
		return S3Config{}, fmt.Errorf("%w: MAPTHENET_S3_URL_STYLE=%q: use path or virtual", ErrBadLocation, cfg.URLStyle)
	}
	if v := first("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return S3Config{}, fmt.Errorf("%w: AWS_MAX_ATTEMPTS=%q: a whole number from 1 to 100", ErrBadLocation, v)
		}
		cfg.MaxAttempts = n
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return S3Config{}, fmt.Errorf("%w: %s: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones)", ErrBadLocation, l)
	}
	return cfg, nil
}
