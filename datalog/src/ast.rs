//! Abstract syntax of a Datalog program (byte spans into the source).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    /// The operator with its operands swapped (`a < b` == `b > a`).
    pub(crate) fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            CmpOp::Eq => CmpOp::Eq,
            CmpOp::Ne => CmpOp::Ne,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Var(String, Span),
    Wildcard(Span),
    Str(String, Span),
    /// Integer literal with its sign applied.
    Int(i64, Span),
    Bin(BinOp, Box<Expr>, Box<Expr>, Span),
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Var(_, s)
            | Expr::Wildcard(s)
            | Expr::Str(_, s)
            | Expr::Int(_, s)
            | Expr::Bin(_, _, _, s) => *s,
        }
    }

    /// Visit all variables (name, span) in the expression.
    pub fn vars<'a>(&'a self, out: &mut Vec<(&'a str, Span)>) {
        match self {
            Expr::Var(v, s) => out.push((v, *s)),
            Expr::Bin(_, a, b, _) => {
                a.vars(out);
                b.vars(out);
            }
            _ => {}
        }
    }

    pub fn wildcards(&self, out: &mut Vec<Span>) {
        match self {
            Expr::Wildcard(s) => out.push(*s),
            Expr::Bin(_, a, b, _) => {
                a.wildcards(out);
                b.wildcards(out);
            }
            _ => {}
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Atom {
    pub rel: String,
    pub rel_span: Span,
    pub args: Vec<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Literal {
    Pos(Atom),
    Neg(Atom),
    Cmp(Expr, CmpOp, Expr, Span),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rule {
    pub head: Atom,
    pub body: Vec<Literal>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decl {
    pub name: String,
    pub name_span: Span,
    pub columns: Vec<(String, String, Span)>, // (name, type name, type span)
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IoDirective {
    pub is_input: bool,
    pub name: String,
    pub span: Span,
    pub filename: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct Ast {
    pub decls: Vec<Decl>,
    pub ios: Vec<IoDirective>,
    pub rules: Vec<Rule>,
}
