//! Tokenizer for the Datalog dialect.

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    /// `.decl`, `.input`, ... (the name without the dot)
    Directive(String),
    Str(String),
    /// Unsigned integer literal as written (sign handled by the parser).
    Int(u64),
    LParen,
    RParen,
    Comma,
    Colon,
    Dot,
    ColonDash,
    Bang,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Underscore,
    Eof,
}

impl Tok {
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("identifier `{s}`"),
            Tok::Directive(s) => format!("directive `.{s}`"),
            Tok::Str(_) => "string literal".into(),
            Tok::Int(n) => format!("number `{n}`"),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Colon => "`:`".into(),
            Tok::Dot => "`.`".into(),
            Tok::ColonDash => "`:-`".into(),
            Tok::Bang => "`!`".into(),
            Tok::Lt => "`<`".into(),
            Tok::Le => "`<=`".into(),
            Tok::Gt => "`>`".into(),
            Tok::Ge => "`>=`".into(),
            Tok::Eq => "`=`".into(),
            Tok::Ne => "`!=`".into(),
            Tok::Plus => "`+`".into(),
            Tok::Minus => "`-`".into(),
            Tok::Star => "`*`".into(),
            Tok::Slash => "`/`".into(),
            Tok::Percent => "`%`".into(),
            Tok::Underscore => "`_`".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

/// A lexical error: byte span and message.
pub(crate) struct LexError {
    pub start: usize,
    pub end: usize,
    pub message: String,
}

pub(crate) fn lex(src: &str) -> (Vec<Token>, Vec<LexError>) {
    let bytes = src.as_bytes();
    let mut toks = Vec::new();
    let mut errs = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i += 2;
            let mut closed = false;
            while i < bytes.len() {
                if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                    i += 2;
                    closed = true;
                    break;
                }
                i += 1;
            }
            if !closed {
                errs.push(LexError {
                    start,
                    end: start + 2,
                    message: "unterminated block comment".into(),
                });
            }
            continue;
        }
        let simple = |t: Tok, len: usize| (t, len);
        let two = bytes.get(i + 1).copied();
        let (tok, len) = match c {
            b'(' => simple(Tok::LParen, 1),
            b')' => simple(Tok::RParen, 1),
            b',' => simple(Tok::Comma, 1),
            b':' if two == Some(b'-') => simple(Tok::ColonDash, 2),
            b':' => simple(Tok::Colon, 1),
            b'!' if two == Some(b'=') => simple(Tok::Ne, 2),
            b'!' => simple(Tok::Bang, 1),
            b'<' if two == Some(b'=') => simple(Tok::Le, 2),
            b'<' => simple(Tok::Lt, 1),
            b'>' if two == Some(b'=') => simple(Tok::Ge, 2),
            b'>' => simple(Tok::Gt, 1),
            b'=' => simple(Tok::Eq, 1),
            b'+' => simple(Tok::Plus, 1),
            b'-' => simple(Tok::Minus, 1),
            b'*' => simple(Tok::Star, 1),
            b'/' => simple(Tok::Slash, 1),
            b'%' => simple(Tok::Percent, 1),
            b'.' => {
                // Directive if immediately followed by a letter.
                let mut j = i + 1;
                while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                    j += 1;
                }
                if j > i + 1 && bytes[i + 1].is_ascii_alphabetic() {
                    (Tok::Directive(src[i + 1..j].to_string()), j - i)
                } else {
                    (Tok::Dot, 1)
                }
            }
            b'"' => {
                let mut j = i + 1;
                let mut s = String::new();
                let mut closed = false;
                while j < bytes.len() {
                    match bytes[j] {
                        b'"' => {
                            closed = true;
                            j += 1;
                            break;
                        }
                        b'\n' => break,
                        b'\\' if j + 1 < bytes.len() => {
                            match bytes[j + 1] {
                                b'n' => s.push('\n'),
                                b't' => s.push('\t'),
                                b'"' => s.push('"'),
                                b'\\' => s.push('\\'),
                                _ => {
                                    errs.push(LexError {
                                        start: j,
                                        end: j + 2,
                                        message: "unknown escape sequence in string".into(),
                                    });
                                }
                            }
                            j += 2;
                            // keep j on a char boundary
                            while j < bytes.len() && !src.is_char_boundary(j) {
                                j += 1;
                            }
                        }
                        _ => {
                            let ch = src[j..].chars().next().unwrap_or('\u{FFFD}');
                            s.push(ch);
                            j += ch.len_utf8().max(1);
                        }
                    }
                }
                if !closed {
                    errs.push(LexError {
                        start: i,
                        end: i + 1,
                        message: "unterminated string literal".into(),
                    });
                }
                (Tok::Str(s), j - i)
            }
            b'0'..=b'9' => {
                let mut j = i;
                while j < bytes.len() && bytes[j].is_ascii_digit() {
                    j += 1;
                }
                match src[i..j].parse::<u64>() {
                    Ok(n) if n <= u32::MAX as u64 + 1 => (Tok::Int(n), j - i),
                    _ => {
                        errs.push(LexError {
                            start: i,
                            end: j,
                            message: "integer literal out of range".into(),
                        });
                        (Tok::Int(0), j - i)
                    }
                }
            }
            b'_' if !bytes
                .get(i + 1)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_') =>
            {
                simple(Tok::Underscore, 1)
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i;
                while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                    j += 1;
                }
                (Tok::Ident(src[i..j].to_string()), j - i)
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('\u{FFFD}');
                let l = ch.len_utf8();
                errs.push(LexError {
                    start: i,
                    end: i + l,
                    message: format!("unexpected character `{}`", ch.escape_default()),
                });
                i += l;
                continue;
            }
        };
        i += len;
        toks.push(Token { tok, start, end: i });
    }
    toks.push(Token {
        tok: Tok::Eof,
        start: src.len(),
        end: src.len(),
    });
    (toks, errs)
}
