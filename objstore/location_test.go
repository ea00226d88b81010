package objstore_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/objstore"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want objstore.Location
		bad  string // part of the error, "" when it parses
	}{
		{in: "/srv/snapshots", want: objstore.Location{Dir: "/srv/snapshots"}},
		{in: "/srv/snapshots/", want: objstore.Location{Dir: "/srv/snapshots"}},
		{in: "snapshots", want: objstore.Location{Dir: "snapshots"}},
		{in: "./a/../snapshots", want: objstore.Location{Dir: "snapshots"}},
		{in: "file:///srv/snapshots", want: objstore.Location{Dir: "/srv/snapshots"}},
		{in: "file://localhost/srv/x", want: objstore.Location{Dir: "/srv/x"}},
		{in: "s3://my-bucket", want: objstore.Location{Bucket: "my-bucket"}},
		{in: "s3://my-bucket/", want: objstore.Location{Bucket: "my-bucket"}},
		{in: "s3://my.bucket.2/map/the/net/", want: objstore.Location{Bucket: "my.bucket.2", Prefix: "map/the/net"}},
		{in: "", bad: "empty"},
		{in: "s3://", bad: "3 to 63"},
		{in: "s3://ab", bad: "3 to 63"},
		{in: "s3://My-Bucket/x", bad: "lower-case"},
		{in: "s3://my_bucket/x", bad: "lower-case"},
		{in: "s3://-bucket", bad: "start and end"},
		{in: "s3://a..b", bad: `".."`},
		{in: "s3://192.168.1.1/x", bad: "IP address"},
		{in: "s3://bucket/a//b", bad: "empty path segment"},
		{in: "s3://bucket/a/../b", bad: `".."`},
		{in: "s3://bucket/.tmp-x", bad: ".tmp-"},
		{in: "s3://bucket/x?versionId=3", bad: "no query"},
		{in: "s3://bucket/x#frag", bad: "no query"},
		{in: "s3://key:secret@bucket/x", bad: "no query, fragment, user"},
		{in: "s3://bucket:9000/x", bad: "port"},
		{in: "s3:bucket/x", bad: "s3://"},
		{in: "S3://bucket/x", want: objstore.Location{Bucket: "bucket", Prefix: "x"}}, // schemes ignore case
		{in: "gs://bucket/x", bad: "unknown scheme"},
		{in: "http://host/bucket", bad: "unknown scheme"},
		{in: "file://host/srv", bad: "local path"},
		{in: "file:///", bad: "no directory"},
		{in: "file:relative", bad: "file://"},
		{in: "/srv/a\x00b", bad: "NUL"},
	} {
		got, err := objstore.ParseLocation(tc.in)
		if tc.bad != "" {
			if err == nil || !errors.Is(err, objstore.ErrBadLocation) || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("ParseLocation(%q) = %+v, %v; want an ErrBadLocation about %q", tc.in, got, err, tc.bad)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseLocation(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if back, err := objstore.ParseLocation(got.String()); err != nil || back != got {
			t.Errorf("ParseLocation(%q).String() = %q reads back as %+v, %v", tc.in, got.String(), back, err)
		}
	}
}

// FuzzParseLocation: any input parses or is an ErrBadLocation, never a
// panic, and what parses reads back the same from its String.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"/srv/x", "rel", "file:///a/b", "s3://bucket/prefix", "s3://b.c-d/x/y/", "s3://bucket/a%2Fb", "s3:x", "%zz", "file://h/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := objstore.ParseLocation(s)
		if err != nil {
			if !errors.Is(err, objstore.ErrBadLocation) {
				t.Fatalf("ParseLocation(%q): %v is not an ErrBadLocation", s, err)
			}
			return
		}
		if loc.IsS3() == (loc.Dir != "") {
			t.Fatalf("ParseLocation(%q) = %+v: both or neither a directory and a bucket", s, loc)
		}
		back, err := objstore.ParseLocation(loc.String())
		if err != nil || back != loc {
			t.Fatalf("ParseLocation(%q) = %+v, whose String %q reads back as %+v, %v", s, loc, loc.String(), back, err)
		}
	})
}

func TestS3ConfigFromEnv(t *testing.T) {
	loc := objstore.Location{Bucket: "bucket", Prefix: "p"}
	base := map[string]string{"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "SECRET"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want objstore.S3Config
		bad  string
	}{
		{name: "defaults (AWS)", env: base,
			want: objstore.S3Config{Bucket: "bucket", Prefix: "p", AccessKeyID: "AKID", SecretAccessKey: "SECRET"}},
		{name: "a local server", env: map[string]string{
			"AWS_ENDPOINT_URL": "https://ignored:1", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:7070",
			"AWS_DEFAULT_REGION": "eu-west-1", "AWS_SESSION_TOKEN": "TOKEN", "MAPTHENET_S3_URL_STYLE": "path",
			"AWS_MAX_ATTEMPTS": "3", "AWS_CA_BUNDLE": "/etc/ca.pem"},
			want: objstore.S3Config{Bucket: "bucket", Prefix: "p", AccessKeyID: "AKID", SecretAccessKey: "SECRET",
				SessionToken: "TOKEN", Endpoint: "http://127.0.0.1:7070", Region: "eu-west-1", URLStyle: "path",
				MaxAttempts: 3, CABundle: "/etc/ca.pem"}},
		{name: "AWS_REGION first", env: map[string]string{"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "https://s3.example.net"},
			want: objstore.S3Config{Bucket: "bucket", Prefix: "p", AccessKeyID: "AKID", SecretAccessKey: "SECRET",
				Region: "us-west-2", Endpoint: "https://s3.example.net"}},
		{name: "no secret", env: map[string]string{"AWS_SECRET_ACCESS_KEY": " "}, bad: "AWS_SECRET_ACCESS_KEY"},
		{name: "endpoint with a path", env: map[string]string{"AWS_ENDPOINT_URL_S3": "http://h:1/s3"}, bad: "only a scheme"},
		{name: "endpoint without scheme", env: map[string]string{"AWS_ENDPOINT_URL_S3": "127.0.0.1:7070"}, bad: "http://host"},
		{name: "bad style", env: map[string]string{"MAPTHENET_S3_URL_STYLE": "vhost"}, bad: "path or virtual"},
		{name: "bad attempts", env: map[string]string{"AWS_MAX_ATTEMPTS": "0"}, bad: "AWS_MAX_ATTEMPTS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range tc.env {
				env[k] = v
			}
			got, err := objstore.S3ConfigFromEnv(loc, func(k string) string { return env[k] })
			if tc.bad != "" {
				if !errors.Is(err, objstore.ErrBadLocation) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("got %+v, %v; want an ErrBadLocation about %q", got, err, tc.bad)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

// TestOpenLocation: a directory location opens a Dir; an S3 location with
// credentials opens an S3 store without a request; without them it is a
// usage error naming the variables.
func TestOpenLocation(t *testing.T) {
	dir := t.TempDir()
	st, err := objstore.Location{Dir: dir}.Open(nil)
	if d, ok := st.(*objstore.Dir); err != nil || !ok || d.Root() != dir {
		t.Fatalf("Open(dir) = %v, %v", st, err)
	}
	loc := objstore.Location{Bucket: "bucket", Prefix: "x/y"}
	env := map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1"}
	st, err = loc.Open(func(k string) string { return env[k] })
	if err != nil || st.String() != "s3://bucket/x/y" {
		t.Fatalf("Open(s3) = %v, %v", st, err)
	}
	_, err = loc.Open(func(string) string { return "" })
	if !errors.Is(err, objstore.ErrBadLocation) || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("Open(s3) without credentials: %v", err)
	}
}
