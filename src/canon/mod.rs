//! Canonical kernel texts: the lexer, the renamer, segment names and kernel tokens.
