// Package webbotauth signs the crawler's HTTP requests with Web Bot Auth
// (RFC 9421 HTTP Message Signatures, Ed25519; draft-ietf-webbotauth-httpsig-protocol-01)
// and serves the signed key directory at /.well-known/http-message-signatures-directory.
// The choices are those of notes/web-bot-auth.md, section 9.
//
// # Keys
//
// Keys live in <data-dir>/keys/, one private JWK per file named <keyid>.jwk
// (mode 0600, directory 0700). The keyid is the RFC 7638 thumbprint of the
// public key. Each file also records when the key was created, from when it
// signs (not_before), until when it signs (sign_until, set by a rotation) and
// when it leaves the directory (retire).
//
// # Rotation rule
//
// Verifiers cache the directory for up to DirectoryMaxAge (24 h, its
// Cache-Control max-age), and a signature stays valid for SignatureLifetime
// (5 min). Rotate therefore:
//
//  1. adds a new key that is published at once but signs only from
//     switch = now + PublicationDelay (24 h = DirectoryMaxAge), so that every
//     cached copy of the directory lists it before its first signature;
//  2. lets the old key sign until switch, and keeps it published until
//     switch + SignatureLifetime + DirectoryMaxAge: its last signature has
//     expired by switch + 5 min, and the extra cache lifetime covers verifiers
//     whose clocks or caches lag (removal is the only revocation there is);
//  3. deletes the files of keys whose retire time has passed.
//
// A second rotation while a new key is still waiting for its switch time is
// refused (ErrRotationPending): it would cut the waiting key's publication short.
package webbotauth
