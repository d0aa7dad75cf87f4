//! Every problem code Mandate's source can produce, read from the source of
//! core and the host with `syn`, so a test can hold the title table to it:
//! the string literals in every `fn code` (core's error enums and the
//! host's), and, in the host, every literal or `const` passed where a
//! function takes a parameter `code: &str` (`ApiError::new`,
//! `ApiError::forbidden`, the local `refused` helpers, …) or bound to a
//! local `code`, directly or by an `if` or a `match`. Test modules are
//! passed over: their codes may be made up. A code built at run time from
//! anything else would escape it; none is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::{self, Visit};

/// Whether `attrs` hold `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// Every string literal under a node.
#[derive(Default)]
struct Literals(BTreeSet<String>);

impl Visit<'_> for Literals {
    fn visit_lit_str(&mut self, literal: &syn::LitStr) {
        self.0.insert(literal.value());
    }
}

/// A function that takes a code: where the code is among a call's
/// arguments, the receiver (if any) left out.
#[derive(Debug, Clone, Copy)]
struct Taker {
    position: usize,
    receiver: bool,
}

/// What the first pass learns: the functions that take a code, the string
/// constants, and the codes of every `fn code`.
#[derive(Default)]
struct Declarations {
    takers: BTreeMap<String, Taker>,
    consts: BTreeMap<String, String>,
    codes: BTreeSet<String>,
}

impl Declarations {
    fn function(&mut self, signature: &syn::Signature, body: &syn::Block) {
        let name = signature.ident.to_string();
        if name == "code" {
            let mut literals = Literals::default();
            literals.visit_block(body);
            self.codes.extend(literals.0);
        }
        let receiver = signature.receiver().is_some();
        let taken = signature
            .inputs
            .iter()
            .filter_map(|input| match input {
                syn::FnArg::Typed(typed) => Some(typed),
                syn::FnArg::Receiver(_) => None,
            })
            .position(|typed| {
                let named_code =
                    matches!(&*typed.pat, syn::Pat::Ident(pat) if pat.ident == "code");
                let is_str = matches!(&*typed.ty, syn::Type::Reference(reference)
                    if matches!(&*reference.elem, syn::Type::Path(path) if path.path.is_ident("str")));
                named_code && is_str
            });
        if let Some(position) = taken {
            self.takers.insert(name, Taker { position, receiver });
        }
    }
}

impl Visit<'_> for Declarations {
    fn visit_item_mod(&mut self, module: &syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_fn(&mut self, function: &syn::ItemFn) {
        self.function(&function.sig, &function.block);
        visit::visit_item_fn(self, function);
    }

    fn visit_impl_item_fn(&mut self, function: &syn::ImplItemFn) {
        self.function(&function.sig, &function.block);
        visit::visit_impl_item_fn(self, function);
    }

    fn visit_item_const(&mut self, constant: &syn::ItemConst) {
        if let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(value),
            ..
        }) = &*constant.expr
        {
            self.consts
                .insert(constant.ident.to_string(), value.value());
        }
        visit::visit_item_const(self, constant);
    }
}

/// The second pass: the codes passed to the functions that take one.
struct Calls<'a> {
    declared: &'a Declarations,
    codes: BTreeSet<String>,
}

/// The expression a block yields, if it ends in one.
fn tail(block: &syn::Block) -> Option<&syn::Expr> {
    match block.stmts.last() {
        Some(syn::Stmt::Expr(last, None)) => Some(last),
        _ => None,
    }
}

impl Calls<'_> {
    /// The codes an expression passes: a literal, a named constant, or
    /// what each branch of an `if` or `match` yields.
    fn argument(&mut self, argument: &syn::Expr) {
        match argument {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(code),
                ..
            }) => {
                self.codes.insert(code.value());
            }
            syn::Expr::Path(path) => {
                let constant = path.path.get_ident().map(ToString::to_string);
                if let Some(code) = constant.and_then(|c| self.declared.consts.get(&c)) {
                    self.codes.insert(code.clone());
                }
            }
            syn::Expr::If(choice) => {
                if let Some(then) = tail(&choice.then_branch) {
                    self.argument(then);
                }
                if let Some((_, otherwise)) = &choice.else_branch {
                    self.argument(otherwise);
                }
            }
            syn::Expr::Block(block) => {
                if let Some(last) = tail(&block.block) {
                    self.argument(last);
                }
            }
            syn::Expr::Match(choice) => {
                for arm in &choice.arms {
                    self.argument(&arm.body);
                }
            }
            _ => {}
        }
    }
}

impl Visit<'_> for Calls<'_> {
    fn visit_item_mod(&mut self, module: &syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            visit::visit_item_mod(self, module);
        }
    }

    fn visit_expr_call(&mut self, call: &syn::ExprCall) {
        if let syn::Expr::Path(path) = &*call.func
            && let Some(last) = path.path.segments.last()
            && let Some(taker) = self.declared.takers.get(&last.ident.to_string())
            && let Some(argument) = call
                .args
                .iter()
                .nth(taker.position + usize::from(taker.receiver))
        {
            self.argument(argument);
        }
        visit::visit_expr_call(self, call);
    }

    fn visit_expr_method_call(&mut self, call: &syn::ExprMethodCall) {
        if let Some(taker) = self.declared.takers.get(&call.method.to_string())
            && taker.receiver
            && let Some(argument) = call.args.iter().nth(taker.position)
        {
            self.argument(argument);
        }
        visit::visit_expr_method_call(self, call);
    }

    fn visit_local(&mut self, local: &syn::Local) {
        if let syn::Pat::Ident(pat) = &local.pat
            && pat.ident == "code"
            && let Some(init) = &local.init
        {
            self.argument(&init.expr);
        }
        visit::visit_local(self, local);
    }
}

fn parsed_files(dir: &Path) -> Vec<syn::File> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut paths = Vec::new();
    walk(dir, &mut paths);
    paths
        .iter()
        .map(|path| {
            let source = std::fs::read_to_string(path).unwrap();
            syn::parse_file(&source).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

/// Every code in the source of core and the host.
pub(super) fn emitted() -> BTreeSet<String> {
    let host_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let host = parsed_files(&host_dir.join("src"));
    let core = parsed_files(&host_dir.join("../core/src"));
    let mut declared = Declarations::default();
    for file in &host {
        declared.visit_file(file);
    }
    let mut core_codes = Declarations::default();
    for file in &core {
        core_codes.visit_file(file);
    }
    let mut calls = Calls {
        declared: &declared,
        codes: BTreeSet::new(),
    };
    for file in &host {
        calls.visit_file(file);
    }
    let mut codes = calls.codes;
    codes.extend(declared.codes.iter().cloned());
    codes.extend(core_codes.codes);
    codes
}

/// The name each type deriving `ToSchema` takes in the OpenAPI document:
/// its own, or the one `#[schema(as = …)]` gives it.
#[derive(Default)]
struct Schemas(BTreeMap<String, usize>);

impl Schemas {
    fn note(&mut self, attrs: &[syn::Attribute], ident: &syn::Ident) {
        let mut derives = false;
        let mut name = ident.to_string();
        for attr in attrs {
            if attr.path().is_ident("derive") {
                let _ = attr.parse_nested_meta(|meta| {
                    derives |= meta
                        .path
                        .segments
                        .last()
                        .is_some_and(|s| s.ident == "ToSchema");
                    Ok(())
                });
            } else if attr.path().is_ident("schema") {
                let _ = attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("as") {
                        let path: syn::Path = meta.value()?.parse()?;
                        if let Some(last) = path.segments.last() {
                            name = last.ident.to_string();
                        }
                    } else if meta.input.peek(syn::Token![=]) {
                        let _: syn::Expr = meta.value()?.parse()?;
                    }
                    Ok(())
                });
            }
        }
        if derives {
            *self.0.entry(name).or_default() += 1;
        }
    }
}

impl Visit<'_> for Schemas {
    fn visit_item_mod(&mut self, module: &syn::ItemMod) {
        if !is_test_only(&module.attrs) {
            visit::visit_item_mod(self, module);
        }
    }

    fn visit_item_struct(&mut self, item: &syn::ItemStruct) {
        self.note(&item.attrs, &item.ident);
    }

    fn visit_item_enum(&mut self, item: &syn::ItemEnum) {
        self.note(&item.attrs, &item.ident);
    }
}

/// utoipa keys the document's schemas by name, so a second type of a name
/// silently replaces the first in it — and in the clients generated from
/// it (the consent decision once replaced the approvals' `DecisionRequest`,
/// and only the dashboard's type check noticed).
#[test]
fn no_two_schemas_share_a_name() {
    let mut schemas = Schemas::default();
    for file in parsed_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src")) {
        schemas.visit_file(&file);
    }
    assert!(
        schemas.0.len() > 50,
        "too few schemas found: {:?}",
        schemas.0
    );
    let shared: Vec<&String> = schemas
        .0
        .iter()
        .filter(|(_, count)| **count > 1)
        .map(|(name, _)| name)
        .collect();
    assert!(shared.is_empty(), "schema names used twice: {shared:?}");
}
