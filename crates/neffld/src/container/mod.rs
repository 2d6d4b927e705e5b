//! S1: the NEFF container — the 1024-byte header, payload integrity, and the
//! in-memory archive (gzip → tar → member table). Knows nothing of JSON.
