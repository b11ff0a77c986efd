//! Recursive-descent parser with error recovery (skips to the end of the statement).

use crate::ast::*;
use crate::lexer::{lex, Tok, Token};

pub(crate) struct ParseError {
    pub span: Span,
    pub message: String,
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    errors: Vec<ParseError>,
    depth: usize,
}

type PResult<T> = Result<T, ()>;

const MAX_DEPTH: usize = 200;
const MAX_BODY: usize = 1000;

pub(crate) fn parse(src: &str) -> (Ast, Vec<ParseError>) {
    let (toks, lex_errs) = lex(src);
    let mut p = Parser {
        toks,
        pos: 0,
        errors: lex_errs
            .into_iter()
            .map(|e| ParseError {
                span: Span {
                    start: e.start,
                    end: e.end,
                },
                message: e.message,
            })
            .collect(),
        depth: 0,
    };
    let mut ast = Ast::default();
    while p.peek() != &Tok::Eof {
        let start_pos = p.pos;
        if p.statement(&mut ast).is_err() {
            p.recover();
        }
        if p.pos == start_pos {
            // Guarantee progress.
            p.pos += 1;
        }
    }
    (ast, p.errors)
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }
    fn cur(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }
    fn span(&self) -> Span {
        let t = self.cur();
        Span {
            start: t.start,
            end: t.end,
        }
    }
    fn prev_span(&self) -> Span {
        let t = &self.toks[self.pos.saturating_sub(1).min(self.toks.len() - 1)];
        Span {
            start: t.start,
            end: t.end,
        }
    }
    fn bump(&mut self) -> Token {
        let t = self.cur().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn error<T>(&mut self, span: Span, message: impl Into<String>) -> PResult<T> {
        self.errors.push(ParseError {
            span,
            message: message.into(),
        });
        Err(())
    }
    fn expected<T>(&mut self, what: &str) -> PResult<T> {
        let found = self.peek().describe();
        let sp = self.span();
        self.error(sp, format!("expected {what}, found {found}"))
    }
    fn expect(&mut self, t: Tok, what: &str) -> PResult<Span> {
        if *self.peek() == t {
            let tok = self.bump();
            Ok(Span {
                start: tok.start,
                end: tok.end,
            })
        } else {
            self.expected(what)
        }
    }

    /// Skip to just after the next `.` ending a statement, or to the next directive.
    fn recover(&mut self) {
        loop {
            match self.peek() {
                Tok::Eof => return,
                Tok::Dot => {
                    self.bump();
                    return;
                }
                Tok::Directive(_) => return,
                _ => {
                    self.bump();
                }
            }
        }
    }

    fn ident(&mut self, what: &str) -> PResult<(String, Span)> {
        if let Tok::Ident(s) = self.peek() {
            let s = s.clone();
            let t = self.bump();
            Ok((
                s,
                Span {
                    start: t.start,
                    end: t.end,
                },
            ))
        } else {
            self.expected(what)
        }
    }

    fn statement(&mut self, ast: &mut Ast) -> PResult<()> {
        match self.peek().clone() {
            Tok::Directive(d) => {
                let dspan = self.span();
                self.bump();
                match d.as_str() {
                    "decl" => {
                        let decl = self.decl()?;
                        ast.decls.push(decl);
                        Ok(())
                    }
                    "input" | "output" => self.io(ast, d == "input"),
                    _ => self.error(dspan, format!("unknown directive `.{d}`")),
                }
            }
            Tok::Ident(_) => {
                let rule = self.rule()?;
                ast.rules.push(rule);
                Ok(())
            }
            _ => self.expected("a directive or a rule"),
        }
    }

    fn decl(&mut self) -> PResult<Decl> {
        let (name, name_span) = self.ident("a relation name")?;
        self.expect(Tok::LParen, "`(`")?;
        let mut columns = Vec::new();
        if *self.peek() != Tok::RParen {
            loop {
                let (cname, _) = self.ident("a column name")?;
                self.expect(Tok::Colon, "`:`")?;
                let (ty, tspan) = self.ident("a column type")?;
                columns.push((cname, ty, tspan));
                if *self.peek() == Tok::Comma {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        self.expect(Tok::RParen, "`,` or `)`")?;
        // Souffle qualifiers such as `btree` / `brie` are accepted and ignored.
        while let Tok::Ident(q) = self.peek() {
            if matches!(q.as_str(), "btree" | "brie" | "eqrel" | "inline" | "magic") {
                self.bump();
            } else {
                break;
            }
        }
        Ok(Decl {
            name,
            name_span,
            columns,
        })
    }

    fn io(&mut self, ast: &mut Ast, is_input: bool) -> PResult<()> {
        loop {
            let (name, span) = self.ident("a relation name")?;
            let mut filename = None;
            if *self.peek() == Tok::LParen {
                self.bump();
                if *self.peek() != Tok::RParen {
                    loop {
                        let (key, _) = self.ident("a parameter name")?;
                        self.expect(Tok::Eq, "`=`")?;
                        let val = match self.peek().clone() {
                            Tok::Str(s) => {
                                self.bump();
                                s
                            }
                            Tok::Ident(s) => {
                                self.bump();
                                s
                            }
                            _ => return self.expected("a parameter value"),
                        };
                        if key == "filename" {
                            filename = Some(val);
                        }
                        if *self.peek() == Tok::Comma {
                            self.bump();
                        } else {
                            break;
                        }
                    }
                }
                self.expect(Tok::RParen, "`,` or `)`")?;
            }
            ast.ios.push(IoDirective {
                is_input,
                name,
                span,
                filename,
            });
            if *self.peek() == Tok::Comma {
                self.bump();
            } else {
                return Ok(());
            }
        }
    }

    fn atom(&mut self) -> PResult<Atom> {
        let (rel, rel_span) = self.ident("a relation name")?;
        self.expect(Tok::LParen, "`(`")?;
        let mut args = Vec::new();
        if *self.peek() != Tok::RParen {
            loop {
                args.push(self.expr()?);
                if *self.peek() == Tok::Comma {
                    self.bump();
                } else {
                    break;
                }
            }
        }
        let end = self.expect(Tok::RParen, "`,` or `)`")?;
        Ok(Atom {
            rel,
            rel_span,
            args,
            span: rel_span.to(end),
        })
    }

    fn rule(&mut self) -> PResult<Rule> {
        let head = self.atom()?;
        let mut body = Vec::new();
        match self.peek() {
            Tok::Dot => {
                self.bump();
            }
            Tok::ColonDash => {
                self.bump();
                loop {
                    if body.len() == MAX_BODY {
                        let sp = self.span();
                        return self
                            .error(sp, format!("rule body has more than {MAX_BODY} literals"));
                    }
                    body.push(self.literal()?);
                    match self.peek() {
                        Tok::Comma => {
                            self.bump();
                        }
                        Tok::Dot => {
                            self.bump();
                            break;
                        }
                        _ => return self.expected("`,` or `.`"),
                    }
                }
            }
            _ => return self.expected("`:-` or `.`"),
        }
        Ok(Rule { head, body })
    }

    fn literal(&mut self) -> PResult<Literal> {
        if *self.peek() == Tok::Bang {
            let bang = self.span();
            self.bump();
            let mut a = self.atom()?;
            a.span = bang.to(a.span);
            return Ok(Literal::Neg(a));
        }
        // An identifier followed by `(` is an atom; anything else is a comparison.
        if matches!(self.peek(), Tok::Ident(_))
            && self.toks.get(self.pos + 1).map(|t| &t.tok) == Some(&Tok::LParen)
        {
            return Ok(Literal::Pos(self.atom()?));
        }
        let lhs = self.expr()?;
        let op = match self.peek() {
            Tok::Lt => CmpOp::Lt,
            Tok::Le => CmpOp::Le,
            Tok::Gt => CmpOp::Gt,
            Tok::Ge => CmpOp::Ge,
            Tok::Eq => CmpOp::Eq,
            Tok::Ne => CmpOp::Ne,
            _ => return self.expected("a comparison operator or an atom"),
        };
        self.bump();
        let rhs = self.expr()?;
        let span = lhs.span().to(rhs.span());
        Ok(Literal::Cmp(lhs, op, rhs, span))
    }

    fn expr(&mut self) -> PResult<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let sp = self.span();
            self.depth -= 1;
            return self.error(sp, "expression nested too deeply");
        }
        let r = self.additive();
        self.depth -= 1;
        r
    }

    fn additive(&mut self) -> PResult<Expr> {
        let saved = self.depth;
        let r = self.additive_inner();
        self.depth = saved;
        r
    }

    /// Each operator of a chain counts as one level of nesting (the tree is left-deep).
    fn additive_inner(&mut self) -> PResult<Expr> {
        let mut lhs = self.multiplicative()?;
        loop {
            let op = match self.peek() {
                Tok::Plus => BinOp::Add,
                Tok::Minus => BinOp::Sub,
                _ => return Ok(lhs),
            };
            let sp = self.span();
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return self.error(sp, "expression nested too deeply");
            }
            self.bump();
            let rhs = self.multiplicative()?;
            let span = lhs.span().to(rhs.span());
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs), span);
        }
    }

    fn multiplicative(&mut self) -> PResult<Expr> {
        let saved = self.depth;
        let r = self.multiplicative_inner();
        self.depth = saved;
        r
    }

    fn multiplicative_inner(&mut self) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        loop {
            let op = match self.peek() {
                Tok::Star => BinOp::Mul,
                Tok::Slash => BinOp::Div,
                Tok::Percent => BinOp::Rem,
                _ => return Ok(lhs),
            };
            let sp = self.span();
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return self.error(sp, "expression nested too deeply");
            }
            self.bump();
            let rhs = self.unary()?;
            let span = lhs.span().to(rhs.span());
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs), span);
        }
    }

    fn unary(&mut self) -> PResult<Expr> {
        if *self.peek() == Tok::Minus {
            let minus = self.span();
            self.bump();
            if let Tok::Int(n) = *self.peek() {
                self.bump();
                let sp = minus.to(self.prev_span());
                return Ok(Expr::Int(-(n as i64), sp));
            }
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                self.depth -= 1;
                return self.error(minus, "expression nested too deeply");
            }
            let inner = self.unary();
            self.depth -= 1;
            let inner = inner?;
            let sp = minus.to(inner.span());
            return Ok(Expr::Bin(
                BinOp::Sub,
                Box::new(Expr::Int(0, minus)),
                Box::new(inner),
                sp,
            ));
        }
        self.primary()
    }

    fn primary(&mut self) -> PResult<Expr> {
        let sp = self.span();
        match self.peek().clone() {
            Tok::Ident(s) => {
                self.bump();
                if *self.peek() == Tok::LParen {
                    return self.error(
                        sp,
                        format!("unexpected atom `{s}(...)` inside an expression"),
                    );
                }
                Ok(Expr::Var(s, sp))
            }
            Tok::Underscore => {
                self.bump();
                Ok(Expr::Wildcard(sp))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::Str(s, sp))
            }
            Tok::Int(n) => {
                self.bump();
                Ok(Expr::Int(n as i64, sp))
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(e)
            }
            _ => self.expected("a term"),
        }
    }
}
