"""The checksum `hookd migrate` records for a migration (the rule of
engine/core/migrate_checksum.h, byte for byte), for tests and scripts that
build a ledger by hand: a database at an earlier migration, as hookd would
have left it. test_foundation checks that both agree on every migration."""
from __future__ import annotations

import hashlib

_SPACE = b" \t\n\r\f\v"


def _ident(c: int) -> bool:
    return chr(c).isascii() and (chr(c).isalnum() or c in b"_$") or c >= 0x80


def _quoted(s: bytes, i: int, q: int, backslash: bool, out: bytearray) -> int:
    out.append(s[i])
    i += 1
    while i < len(s):
        c = s[i]
        out.append(c)
        i += 1
        if backslash and c == 0x5C and i < len(s):
            out.append(s[i])
            i += 1
        elif c == q:
            if i < len(s) and s[i] == q:
                out.append(s[i])
                i += 1
            else:
                break
    return i


def _dollar_tag(s: bytes, i: int) -> int:
    if i > 0 and _ident(s[i - 1]):
        return 0
    j = i + 1
    if j < len(s) and chr(s[j]).isdigit():
        return 0
    while j < len(s) and s[j] != 0x24 and _ident(s[j]):
        j += 1
    return j - i + 1 if j < len(s) and s[j] == 0x24 else 0


class _Norm:
    def __init__(self) -> None:
        self.out = bytearray()
        self.space = False

    def put(self, c: int) -> None:
        if self.space and self.out:
            self.out.append(0x20)
        self.space = False
        self.out.append(c)

    def run(self, s: bytes) -> None:
        i = 0
        while i < len(s):
            c, d = s[i], s[i + 1] if i + 1 < len(s) else 0
            if c == 0x2D and d == 0x2D:  # --
                while i < len(s) and s[i] != 0x0A:
                    i += 1
                self.space = True
            elif c == 0x2F and d == 0x2A:  # /*
                depth = 0
                while i < len(s):
                    if s[i:i + 2] == b"/*":
                        depth, i = depth + 1, i + 2
                    elif s[i:i + 2] == b"*/":
                        depth, i = depth - 1, i + 2
                        if depth == 0:
                            break
                    else:
                        i += 1
                self.space = True
            elif c in b"'\"":
                e = c == 0x27 and i > 0 and s[i - 1] in b"Ee" and (i < 2 or not _ident(s[i - 2]))
                if self.space and self.out:
                    self.out.append(0x20)
                self.space = False
                i = _quoted(s, i, c, e, self.out)
            elif c == 0x24 and (t := _dollar_tag(s, i)) and (end := s.find(s[i:i + t], i + t)) >= 0:
                for k in s[i:i + t]:
                    self.put(k)
                self.run(s[i + t:end])
                for k in s[end:end + t]:
                    self.put(k)
                i = end + t
            elif c in _SPACE:
                self.space = True
                i += 1
            else:
                self.put(c)
                i += 1


def normalise(sql: bytes) -> bytes:
    n = _Norm()
    n.run(sql)
    return bytes(n.out)


def checksum(sql: bytes) -> str:
    """The hex SHA-256 of the migration's SQL without comments."""
    return hashlib.sha256(normalise(sql)).hexdigest()
