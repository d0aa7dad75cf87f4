//! One connection type over the two storage engines, the embedded SQLite
//! and PostgreSQL, so that every statement of the store, the ledger and the
//! read side is written once and runs on either.
//!
//! The interface is the part of rusqlite's that Mandate uses (prepared and
//! cached statements, `params!`, rows read by position or name,
//! `optional()`), and values have SQLite's five storage classes on both
//! engines: null, integer, real, text and blob. On PostgreSQL an integer
//! binds to whatever integer, boolean or float type the statement expects
//! and reads back from any of them, so Rust code never depends on which
//! engine typed a column. Statements are written in the SQL both engines
//! speak, with `?NNN` or `?` placeholders (rewritten to `$NNN` for
//! PostgreSQL); the few that differ ask [`Connection::dialect`].

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;

use tokio_postgres::types::{Format, IsNull, Kind, ToSql as PgTo, Type, to_sql_checked};

use crate::metrics::DbTally;

/// Which engine a connection speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// What a statement can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Postgres(#[from] tokio_postgres::Error),
    /// PostgreSQL could not be connected to (unreachable, shutting down,
    /// refusing connections, refusing the credentials).
    #[error("cannot connect: {0}")]
    Connect(tokio_postgres::Error),
    /// A statement of the transaction failed before its `COMMIT`, which
    /// PostgreSQL would answer with a rollback: nothing of it is kept.
    #[error("the transaction was rolled back: a statement of it failed")]
    RolledBack,
    /// `query_row` found no row (see [`OptionalExtension::optional`]).
    #[error("the query returned no rows")]
    QueryReturnedNoRows,
    /// A value that does not fit the Rust type asked for, or a parameter
    /// the column cannot take.
    #[error("{0}")]
    Conversion(String),
}

impl Error {
    /// A stored value without the form its writer gave it.
    pub fn corrupt(what: impl fmt::Display, cause: impl fmt::Display) -> Error {
        Error::Conversion(format!("{what}: {cause}"))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `query_row(…).optional()`: no row is `None`, not an error.
pub trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(value) => Ok(Some(value)),
            Err(
                Error::QueryReturnedNoRows | Error::Sqlite(rusqlite::Error::QueryReturnedNoRows),
            ) => Ok(None),
            Err(error) => Err(error),
        }
    }
}

pub mod types {
    //! Values as both engines store them: SQLite's storage classes.

    use super::{Error, Result};

    /// A value borrowed from a row or a parameter.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum ValueRef<'a> {
        Null,
        Integer(i64),
        Real(f64),
        Text(&'a str),
        Blob(&'a [u8]),
    }

    /// An owned value, for statements whose parameters are built at run
    /// time.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Null,
        Integer(i64),
        Real(f64),
        Text(String),
        Blob(Vec<u8>),
    }

    impl ValueRef<'_> {
        pub(super) fn kind(&self) -> &'static str {
            match self {
                ValueRef::Null => "null",
                ValueRef::Integer(_) => "an integer",
                ValueRef::Real(_) => "a real",
                ValueRef::Text(_) => "text",
                ValueRef::Blob(_) => "a blob",
            }
        }
    }

    /// A Rust value a statement can take as a parameter.
    pub trait ToSql {
        fn to_sql(&self) -> Result<ValueRef<'_>>;
    }

    /// A Rust value a column can be read into.
    pub trait FromSql: Sized {
        fn from_sql(value: ValueRef<'_>) -> Result<Self>;
    }

    fn mismatch<T>(value: ValueRef<'_>, wanted: &str) -> Result<T> {
        Err(Error::Conversion(format!(
            "a column holds {} where {wanted} was expected",
            value.kind()
        )))
    }

    impl<T: ToSql + ?Sized> ToSql for &T {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            (**self).to_sql()
        }
    }

    impl<T: ToSql> ToSql for Option<T> {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            match self {
                Some(value) => value.to_sql(),
                None => Ok(ValueRef::Null),
            }
        }
    }

    impl ToSql for Value {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            Ok(match self {
                Value::Null => ValueRef::Null,
                Value::Integer(i) => ValueRef::Integer(*i),
                Value::Real(f) => ValueRef::Real(*f),
                Value::Text(s) => ValueRef::Text(s),
                Value::Blob(b) => ValueRef::Blob(b),
            })
        }
    }

    impl ToSql for str {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            Ok(ValueRef::Text(self))
        }
    }

    impl ToSql for String {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            Ok(ValueRef::Text(self))
        }
    }

    impl ToSql for [u8] {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            Ok(ValueRef::Blob(self))
        }
    }

    impl ToSql for Vec<u8> {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            Ok(ValueRef::Blob(self))
        }
    }

    impl<const N: usize> ToSql for [u8; N] {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            Ok(ValueRef::Blob(self))
        }
    }

    impl ToSql for f64 {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            Ok(ValueRef::Real(*self))
        }
    }

    impl ToSql for bool {
        fn to_sql(&self) -> Result<ValueRef<'_>> {
            Ok(ValueRef::Integer(i64::from(*self)))
        }
    }

    macro_rules! integers {
        ($($int:ty),*) => {$(
            impl ToSql for $int {
                fn to_sql(&self) -> Result<ValueRef<'_>> {
                    i64::try_from(*self).map(ValueRef::Integer).map_err(|_| {
                        Error::Conversion(format!("{self} does not fit a 64-bit integer column"))
                    })
                }
            }

            impl FromSql for $int {
                fn from_sql(value: ValueRef<'_>) -> Result<$int> {
                    match value {
                        ValueRef::Integer(i) => <$int>::try_from(i).map_err(|_| {
                            Error::Conversion(format!(
                                "the stored integer {i} does not fit {}",
                                stringify!($int)
                            ))
                        }),
                        other => mismatch(other, "an integer"),
                    }
                }
            }
        )*};
    }

    integers!(i64, i32, u8, u16, u32, u64, usize);

    impl<T: FromSql> FromSql for Option<T> {
        fn from_sql(value: ValueRef<'_>) -> Result<Option<T>> {
            match value {
                ValueRef::Null => Ok(None),
                other => T::from_sql(other).map(Some),
            }
        }
    }

    impl FromSql for bool {
        fn from_sql(value: ValueRef<'_>) -> Result<bool> {
            match value {
                ValueRef::Integer(i) => Ok(i != 0),
                other => mismatch(other, "a boolean"),
            }
        }
    }

    impl FromSql for f64 {
        fn from_sql(value: ValueRef<'_>) -> Result<f64> {
            match value {
                ValueRef::Real(f) => Ok(f),
                #[allow(clippy::cast_precision_loss, reason = "SQLite's own conversion")]
                ValueRef::Integer(i) => Ok(i as f64),
                other => mismatch(other, "a real"),
            }
        }
    }

    impl FromSql for String {
        fn from_sql(value: ValueRef<'_>) -> Result<String> {
            match value {
                ValueRef::Text(s) => Ok(s.to_owned()),
                other => mismatch(other, "text"),
            }
        }
    }

    impl FromSql for Vec<u8> {
        fn from_sql(value: ValueRef<'_>) -> Result<Vec<u8>> {
            match value {
                ValueRef::Blob(b) => Ok(b.to_vec()),
                other => mismatch(other, "a blob"),
            }
        }
    }

    impl FromSql for Value {
        fn from_sql(value: ValueRef<'_>) -> Result<Value> {
            Ok(match value {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(i) => Value::Integer(i),
                ValueRef::Real(f) => Value::Real(f),
                ValueRef::Text(s) => Value::Text(s.to_owned()),
                ValueRef::Blob(b) => Value::Blob(b.to_vec()),
            })
        }
    }
}

use types::{FromSql, ToSql, Value, ValueRef};

/// The parameters of one execution of a statement.
pub trait Params {
    /// The parameters' values, in order.
    fn values(&self) -> Result<Vec<ValueRef<'_>>>;
}

impl Params for &[&dyn ToSql] {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        self.iter().map(|value| value.to_sql()).collect()
    }
}

impl Params for [&dyn ToSql; 0] {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        Ok(Vec::new())
    }
}

macro_rules! array_params {
    ($($n:literal),*) => {$(
        impl<T: ToSql> Params for [T; $n] {
            fn values(&self) -> Result<Vec<ValueRef<'_>>> {
                self.iter().map(ToSql::to_sql).collect()
            }
        }
    )*};
}

array_params!(1, 2, 3, 4, 5, 6, 7, 8);

impl Params for &[Value] {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        self.iter().map(ToSql::to_sql).collect()
    }
}

/// The values of `params`, owned: a row kept to be written later
/// ([`Connection::insert_rows`]).
pub fn owned(params: &dyn Params) -> Result<Vec<Value>> {
    Ok(params
        .values()?
        .into_iter()
        .map(|value| match value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(f) => Value::Real(f),
            ValueRef::Text(s) => Value::Text(s.to_owned()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        })
        .collect())
}

/// Parameters built at run time (see [`params_from_iter`]).
#[derive(Debug)]
pub struct ParamsFromIter(Vec<Value>);

impl Params for ParamsFromIter {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        self.0.iter().map(ToSql::to_sql).collect()
    }
}

/// Parameters from a list built at run time.
pub fn params_from_iter(values: impl IntoIterator<Item = Value>) -> ParamsFromIter {
    ParamsFromIter(values.into_iter().collect())
}

/// A statement's parameters, as rusqlite's `params!` writes them.
#[macro_export]
macro_rules! sql_params {
    () => {
        &[] as &[&dyn $crate::store::sql::types::ToSql]
    };
    ($($param:expr),+ $(,)?) => {
        &[$(&$param as &dyn $crate::store::sql::types::ToSql),+] as &[&dyn $crate::store::sql::types::ToSql]
    };
}
pub use sql_params as params;

/// How a column is named in [`Row::get`]: by position or by name.
pub trait RowIndex:
    rusqlite::RowIndex + tokio_postgres::row::RowIndex + fmt::Display + Copy
{
}
impl RowIndex for usize {}
impl RowIndex for &str {}

/// One row of a result.
pub enum Row<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r tokio_postgres::Row),
}

impl fmt::Debug for Row<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Row")
    }
}

impl Row<'_> {
    /// The column `index`, read into `T`.
    pub fn get<I: RowIndex, T: FromSql>(&self, index: I) -> Result<T> {
        let read = match self {
            Row::Sqlite(row) => T::from_sql(sqlite_value(row.get_ref(index)?)),
            Row::Postgres(row) => T::from_sql(row.try_get::<I, PgValue<'_>>(index)?.0),
        };
        read.map_err(|e| Error::corrupt(format_args!("column {index}"), e))
    }
}

fn sqlite_value(value: rusqlite::types::ValueRef<'_>) -> ValueRef<'_> {
    use rusqlite::types::ValueRef as V;
    match value {
        V::Null => ValueRef::Null,
        V::Integer(i) => ValueRef::Integer(i),
        V::Real(f) => ValueRef::Real(f),
        V::Text(t) => std::str::from_utf8(t).map_or(ValueRef::Blob(t), ValueRef::Text),
        V::Blob(b) => ValueRef::Blob(b),
    }
}

/// A parameter as SQLite binds it.
struct SqliteBind<'a>(ValueRef<'a>);

impl rusqlite::ToSql for SqliteBind<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef as V};
        Ok(ToSqlOutput::Borrowed(match self.0 {
            ValueRef::Null => V::Null,
            ValueRef::Integer(i) => V::Integer(i),
            ValueRef::Real(f) => V::Real(f),
            ValueRef::Text(s) => V::Text(s.as_bytes()),
            ValueRef::Blob(b) => V::Blob(b),
        }))
    }
}

/// A parameter as PostgreSQL binds it: in the type the statement expects.
struct PgBind<'a>(ValueRef<'a>);

/// Only the kind of value: the PostgreSQL client logs its parameters at
/// debug level, and no token, key or id may reach a log.
impl fmt::Debug for PgBind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.0.kind())
    }
}

impl tokio_postgres::types::ToSql for PgBind<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        let wrong = || -> Box<dyn std::error::Error + Sync + Send> {
            format!(
                "{} cannot be bound to a parameter of type {ty}",
                self.0.kind()
            )
            .into()
        };
        match (self.0, ty) {
            (ValueRef::Null, _) => Ok(IsNull::Yes),
            (value, ty) if ty.oid() == 0 => {
                as_text(value, out);
                Ok(IsNull::No)
            }
            (ValueRef::Integer(i), &Type::INT8) => PgTo::to_sql(&i, ty, out),
            (ValueRef::Integer(i), &Type::INT4) => PgTo::to_sql(&i32::try_from(i)?, ty, out),
            (ValueRef::Integer(i), &Type::INT2) => PgTo::to_sql(&i16::try_from(i)?, ty, out),
            (ValueRef::Integer(i), &Type::BOOL) => PgTo::to_sql(&(i != 0), ty, out),
            #[allow(clippy::cast_precision_loss, reason = "SQLite's own conversion")]
            (ValueRef::Integer(i), &Type::FLOAT8) => PgTo::to_sql(&(i as f64), ty, out),
            (ValueRef::Real(f), &Type::FLOAT8) => PgTo::to_sql(&f, ty, out),
            (ValueRef::Text(s), &Type::TEXT | &Type::VARCHAR | &Type::BPCHAR | &Type::NAME) => {
                PgTo::to_sql(&s, ty, out)
            }
            (ValueRef::Blob(b), &Type::BYTEA) => PgTo::to_sql(&b, ty, out),
            _ => Err(wrong()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    /// Text for a parameter of no stated type ([`unspecified`]), which
    /// the server reads as the type it infers; binary for the others.
    fn encode_format(&self, ty: &Type) -> Format {
        if ty.oid() == 0 {
            Format::Text
        } else {
            Format::Binary
        }
    }

    to_sql_checked!();
}

/// The type of a parameter whose type the server infers from the
/// statement (object id 0 in the Parse message, as `prepare` leaves it):
/// how a statement is sent without being prepared by name. Made once; a
/// clone shares it.
fn unspecified() -> Type {
    static UNSPECIFIED: std::sync::LazyLock<Type> = std::sync::LazyLock::new(|| {
        Type::new(
            "unspecified".to_owned(),
            0,
            Kind::Pseudo,
            "pg_catalog".to_owned(),
        )
    });
    UNSPECIFIED.clone()
}

/// A value in PostgreSQL's text input form (of any type the server may
/// infer for it: `1` is a `bigint`, a `boolean` or a `text` alike).
fn as_text(value: ValueRef<'_>, out: &mut tokio_postgres::types::private::BytesMut) {
    match value {
        ValueRef::Null => {}
        ValueRef::Integer(i) => out.extend_from_slice(i.to_string().as_bytes()),
        ValueRef::Real(f) if f.is_nan() => out.extend_from_slice(b"NaN"),
        ValueRef::Real(f) if f.is_infinite() => out.extend_from_slice(if f > 0.0 {
            b"Infinity".as_slice()
        } else {
            b"-Infinity".as_slice()
        }),
        ValueRef::Real(f) => out.extend_from_slice(format!("{f:?}").as_bytes()),
        ValueRef::Text(text) => out.extend_from_slice(text.as_bytes()),
        ValueRef::Blob(bytes) => {
            out.extend_from_slice(b"\\x");
            for byte in bytes {
                out.extend_from_slice(format!("{byte:02x}").as_bytes());
            }
        }
    }
}

/// A column as PostgreSQL returns it, in SQLite's storage classes.
struct PgValue<'a>(ValueRef<'a>);

impl<'a> tokio_postgres::types::FromSql<'a> for PgValue<'a> {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> std::result::Result<PgValue<'a>, Box<dyn std::error::Error + Sync + Send>> {
        use tokio_postgres::types::FromSql as PgFrom;
        let value = match *ty {
            Type::INT8 => ValueRef::Integer(<i64 as PgFrom>::from_sql(ty, raw)?),
            Type::INT4 => ValueRef::Integer(<i32 as PgFrom>::from_sql(ty, raw)?.into()),
            Type::INT2 => ValueRef::Integer(<i16 as PgFrom>::from_sql(ty, raw)?.into()),
            Type::BOOL => ValueRef::Integer(<bool as PgFrom>::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => ValueRef::Real(<f64 as PgFrom>::from_sql(ty, raw)?),
            Type::FLOAT4 => ValueRef::Real(<f32 as PgFrom>::from_sql(ty, raw)?.into()),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                ValueRef::Text(<&str as PgFrom>::from_sql(ty, raw)?)
            }
            Type::BYTEA => ValueRef::Blob(raw),
            _ => {
                return Err(format!(
                    "a column of type {ty} has no storage class (cast it to BIGINT, TEXT or BYTEA)"
                )
                .into());
            }
        };
        Ok(PgValue(value))
    }

    fn from_sql_null(
        _: &Type,
    ) -> std::result::Result<PgValue<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(PgValue(ValueRef::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A statement with `?NNN` (or `?`) placeholders, with PostgreSQL's `$NNN`.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut next = 0;
    let mut chars = sql.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted => {
                out.push('$');
                if chars.peek().is_some_and(char::is_ascii_digit) {
                    while let Some(digit) = chars.next_if(char::is_ascii_digit) {
                        out.push(digit);
                    }
                } else {
                    next += 1;
                    out.push_str(&next.to_string());
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// A PostgreSQL connection: where it connects and the settings it starts
/// its session with (to connect again after losing the server), the client
/// and the runtime that drives it, its prepared statements by text, and how
/// many rows its statements changed.
///
/// The client is tokio-postgres's, driven by a current-thread runtime the
/// connection owns and runs only while its owner waits for the server (as
/// the synchronous `postgres` client does inside): a connection belongs to
/// one thread at a time, and waiting blocks that thread. What the
/// asynchronous client adds is the flight ([`Connection::commit_flight`]):
/// several statements sent together, answered together.
struct Pg {
    config: tokio_postgres::Config,
    tls: Tls,
    session: String,
    /// What starts a transaction: `BEGIN` and the transaction's own
    /// settings (`SET LOCAL`), one message.
    begin: String,
    /// `ROLLBACK` and then `begin`, one message ([`Opening::Again`]).
    again: String,
    /// Declared before `driver`, so dropped before it (see [`Driver`]).
    client: RefCell<tokio_postgres::Client>,
    driver: Driver,
    statements: RefCell<HashMap<String, tokio_postgres::Statement>>,
    changes: Cell<u64>,
    /// Whether a statement failed since the transaction began: PostgreSQL
    /// then answers `COMMIT` with a rollback, so none is sent.
    failed: Cell<bool>,
    /// What the next statement sends first (see [`Opening`]).
    opening: Cell<Opening>,
    /// Behind a pooler in transaction mode (`[database] pooler`): no
    /// statement is prepared by name, since the next transaction may run
    /// on another server connection, shared with other clients.
    pooled: bool,
}

/// The runtime a connection's client is driven by, and the task carrying
/// its messages over the socket (run while the connection waits). Dropped
/// after the client, it runs the task to its end, which sends the server
/// `Terminate` once no client is left: a session ends as the server
/// expects (as the synchronous client's drop did), not by a cut socket.
struct Driver {
    runtime: tokio::runtime::Runtime,
    task: RefCell<tokio::task::JoinHandle<()>>,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.runtime.block_on(self.task.get_mut());
    }
}

/// A statement as a PostgreSQL connection runs it: prepared by name once
/// (and kept), or sent whole each time with its parameters' types left to
/// the server (behind a pooler; one round trip all the same: Parse, Bind,
/// Describe, Execute and Sync in one flight).
#[derive(Clone)]
enum PgStatement {
    Named(tokio_postgres::Statement),
    Unnamed(String),
}

/// How a PostgreSQL connection is made: in the clear (`sslmode=disable`),
/// or with rustls (`prefer` falls back to the clear when the server offers
/// no TLS, `require` does not; certificates are always verified).
#[derive(Clone)]
pub enum Tls {
    None,
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tls::None => "Tls::None",
            Tls::Rustls(_) => "Tls::Rustls",
        })
    }
}

/// What stops the statement a PostgreSQL connection runs, from another
/// thread.
#[derive(Clone)]
pub struct Canceller {
    token: tokio_postgres::CancelToken,
    tls: Tls,
}

impl fmt::Debug for Canceller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Canceller")
    }
}

impl Canceller {
    /// Asks the server to stop the statement running now, if any (blocks:
    /// never on an async task).
    pub fn cancel(&self) -> Result<()> {
        let runtime = runtime().map_err(|e| Error::Conversion(e.to_string()))?;
        runtime.block_on(async {
            match &self.tls {
                Tls::None => self.token.cancel_query(tokio_postgres::NoTls).await,
                Tls::Rustls(tls) => self.token.cancel_query(tls.clone()).await,
            }
        })?;
        Ok(())
    }
}

/// A runtime of the calling thread alone, run only while it waits on it.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Runs a connection's messages until it ends; why it ended is the
/// client's next error.
async fn carry<S, T>(connection: tokio_postgres::Connection<S, T>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    if let Err(error) = connection.await {
        tracing::debug!(%error, "a PostgreSQL connection ended");
    }
}

/// Whether a statement's answer is its rows, or only how many rows it
/// changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Rows,
    Count,
}

/// Sends `statement` with `params` (each with the type a statement sent
/// whole states for it) and reads its answer: the rows changed (or, a
/// query, returned) and, when asked, the rows. The request is sent when
/// the future is first polled: futures polled together are one flight.
async fn call(
    client: &tokio_postgres::Client,
    statement: &PgStatement,
    params: &[(&(dyn tokio_postgres::types::ToSql + Sync), Type)],
    answer: Answer,
) -> std::result::Result<(u64, Vec<tokio_postgres::Row>), tokio_postgres::Error> {
    let rows = |rows: Vec<tokio_postgres::Row>| (rows.len() as u64, rows);
    match (statement, answer) {
        (PgStatement::Named(statement), answer) => {
            let refs: Vec<_> = params.iter().map(|(param, _)| *param).collect();
            match answer {
                Answer::Rows => client.query(statement, &refs).await.map(rows),
                Answer::Count => client
                    .execute(statement, &refs)
                    .await
                    .map(|n| (n, Vec::new())),
            }
        }
        (PgStatement::Unnamed(text), Answer::Rows) => {
            client.query_typed(text, params).await.map(rows)
        }
        (PgStatement::Unnamed(text), Answer::Count) => client
            .execute_typed(text, params)
            .await
            .map(|n| (n, Vec::new())),
    }
}

/// What a PostgreSQL connection's next statement sends first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Opening {
    /// Nothing: the transaction it runs in is open, or none is begun.
    #[default]
    Nothing,
    /// `BEGIN` and the transaction's settings: a transaction begun
    /// ([`Connection::begin`]) whose `BEGIN` is not sent yet goes with its
    /// first statement, in one flight, so starting a transaction costs no
    /// round trip of its own.
    Begin,
    /// `ROLLBACK`, then `BEGIN` and the settings: a commit's flight opened
    /// the next transaction ahead ([`Connection::commit_flight`]) and no
    /// write adopted it ([`Connection::adopt_ahead`]); whatever it took
    /// and read is let go before anything else is sent.
    Again,
}

/// What opens a flight, as `opening` says (see [`Opening`]).
async fn begun(
    client: &tokio_postgres::Client,
    pg: &Pg,
    opening: Opening,
) -> std::result::Result<(), tokio_postgres::Error> {
    match opening {
        Opening::Nothing => Ok(()),
        Opening::Begin => client.batch_execute(&pg.begin).await,
        Opening::Again => client.batch_execute(&pg.again).await,
    }
}

impl Pg {
    fn connect(
        runtime: &tokio::runtime::Runtime,
        config: &tokio_postgres::Config,
        tls: &Tls,
        session: &str,
    ) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>)> {
        runtime.block_on(async {
            let (client, task) = match tls {
                Tls::None => {
                    let (client, connection) = config
                        .connect(tokio_postgres::NoTls)
                        .await
                        .map_err(Error::Connect)?;
                    (client, tokio::spawn(carry(connection)))
                }
                Tls::Rustls(tls) => {
                    let (client, connection) =
                        config.connect(tls.clone()).await.map_err(Error::Connect)?;
                    (client, tokio::spawn(carry(connection)))
                }
            };
            if !session.is_empty() {
                client
                    .batch_execute(session)
                    .await
                    .map_err(Error::Connect)?;
            }
            Ok((client, task))
        })
    }

    /// Connects again if the server was lost.
    fn reconnect_if_lost(&self) -> Result<()> {
        if self.client.borrow().is_closed() {
            let (client, task) =
                Pg::connect(&self.driver.runtime, &self.config, &self.tls, &self.session)?;
            *self.client.borrow_mut() = client;
            self.driver.task.replace(task).abort();
            self.statements.borrow_mut().clear();
            // A transaction opened ahead ended with the session.
            self.opening.set(Opening::Nothing);
        }
        Ok(())
    }

    /// Waits for `future` (the client's), driving the connection meanwhile.
    fn wait<T>(&self, future: impl Future<Output = T>) -> T {
        self.driver.runtime.block_on(future)
    }

    fn statement(&self, sql: &str) -> Result<PgStatement> {
        if self.pooled {
            return Ok(PgStatement::Unnamed(numbered(sql)));
        }
        if let Some(statement) = self.statements.borrow().get(sql) {
            return Ok(PgStatement::Named(statement.clone()));
        }
        let text = numbered(sql);
        let prepared = {
            let client = self.client.borrow();
            self.wait(client.prepare(&text))
        };
        let statement = self.noted(prepared)?;
        self.statements
            .borrow_mut()
            .insert(sql.to_owned(), statement.clone());
        Ok(PgStatement::Named(statement))
    }

    /// Counts a failed statement as a change: on PostgreSQL a failed
    /// statement aborts its transaction, so the writer must roll it back.
    fn noted<T>(&self, result: std::result::Result<T, tokio_postgres::Error>) -> Result<T> {
        result.map_err(|error| {
            self.changes.set(self.changes.get() + 1);
            self.failed.set(true);
            Error::Postgres(error)
        })
    }

    /// Runs `statement` with `params` and reads its answer (see [`call`]).
    fn run(
        &self,
        statement: &PgStatement,
        params: &[(&(dyn tokio_postgres::types::ToSql + Sync), Type)],
        answer: Answer,
    ) -> Result<(u64, Vec<tokio_postgres::Row>)> {
        let result = {
            let client = self.client.borrow();
            let (begun, answered) = self.wait(futures_util::future::join(
                begun(&client, self, self.opening.take()),
                call(&client, statement, params, answer),
            ));
            begun.and(answered)
        };
        self.noted(result)
    }

    /// Runs `statement` with `params`: how many rows it changed (or, a
    /// query, returned).
    fn execute(&self, statement: &PgStatement, params: &dyn Params) -> Result<u64> {
        let values = params.values()?;
        let binds: Vec<PgBind<'_>> = values.into_iter().map(PgBind).collect();
        Ok(self.run(statement, &inferred(&binds), Answer::Count)?.0)
    }

    /// Runs `statement` with `params` and reads every row.
    fn query(
        &self,
        statement: &PgStatement,
        params: &dyn Params,
    ) -> Result<Vec<tokio_postgres::Row>> {
        let values = params.values()?;
        let binds: Vec<PgBind<'_>> = values.into_iter().map(PgBind).collect();
        Ok(self.run(statement, &inferred(&binds), Answer::Rows)?.1)
    }

    /// Runs `statement` with whole columns as arrays ([`PgArray`]): how
    /// many rows it changed.
    fn execute_arrays(&self, statement: &PgStatement, arrays: &[PgArray<'_>]) -> Result<u64> {
        Ok(self.run(statement, &typed_arrays(arrays), Answer::Count)?.0)
    }

    /// Runs `statement` with whole columns as arrays and reads the one
    /// number it answers.
    fn count_arrays(&self, statement: &PgStatement, arrays: &[PgArray<'_>]) -> Result<i64> {
        let (_, rows) = self.run(statement, &typed_arrays(arrays), Answer::Rows)?;
        match rows.first() {
            Some(row) => Ok(row.try_get(0)?),
            None => Err(Error::QueryReturnedNoRows),
        }
    }

    /// Runs statements without parameters, separated by `;`.
    fn batch(&self, sql: &str) -> Result<()> {
        let result = {
            let client = self.client.borrow();
            let (begun, ran) = self.wait(futures_util::future::join(
                begun(&client, self, self.opening.take()),
                client.batch_execute(sql),
            ));
            begun.and(ran)
        };
        self.noted(result)
    }
}

/// Parameters whose types the server infers ([`unspecified`]).
fn inferred<'b>(
    binds: &'b [PgBind<'_>],
) -> Vec<(&'b (dyn tokio_postgres::types::ToSql + Sync), Type)> {
    binds
        .iter()
        .map(|bind| {
            (
                bind as &(dyn tokio_postgres::types::ToSql + Sync),
                unspecified(),
            )
        })
        .collect()
}

/// Whole columns, each with the type of an array of its values.
fn typed_arrays<'b>(
    arrays: &'b [PgArray<'_>],
) -> Vec<(&'b (dyn tokio_postgres::types::ToSql + Sync), Type)> {
    arrays
        .iter()
        .map(|array| (array as _, array.1.pg_array_type()))
        .collect()
}

enum Engine {
    Sqlite(rusqlite::Connection),
    Postgres(Box<Pg>),
}

/// A connection to either engine, counting what it sends in its lane's
/// [`DbTally`] once given one.
pub struct Connection {
    engine: Engine,
    tally: Option<DbTally>,
    /// Transactions open through [`Connection::unchecked_transaction`]:
    /// one opened inside another is a savepoint.
    depth: Cell<u32>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Connection").field(&self.dialect()).finish()
    }
}

impl Connection {
    /// Wraps an open SQLite connection.
    pub fn sqlite(conn: rusqlite::Connection) -> Connection {
        Connection {
            engine: Engine::Sqlite(conn),
            tally: None,
            depth: Cell::new(0),
        }
    }

    /// Connects to PostgreSQL and runs `session` (statements that set up
    /// the session, run again on every reconnection); every transaction
    /// starts with `begin` (`BEGIN` and its `SET LOCAL`s, sent as one
    /// message). `pooled`: behind a pooler in transaction mode, statements
    /// are sent whole, never prepared by name (see [`PgStatement`]).
    pub fn postgres(
        config: &tokio_postgres::Config,
        tls: &Tls,
        session: &str,
        begin: &str,
        pooled: bool,
    ) -> Result<Connection> {
        let runtime = runtime().map_err(|e| Error::Conversion(e.to_string()))?;
        let (client, task) = Pg::connect(&runtime, config, tls, session)?;
        Ok(Connection {
            engine: Engine::Postgres(Box::new(Pg {
                config: config.clone(),
                tls: tls.clone(),
                session: session.to_owned(),
                begin: begin.to_owned(),
                again: format!("ROLLBACK; {begin}"),
                client: RefCell::new(client),
                driver: Driver {
                    runtime,
                    task: RefCell::new(task),
                },
                statements: RefCell::new(HashMap::new()),
                changes: Cell::new(0),
                failed: Cell::new(false),
                opening: Cell::new(Opening::Nothing),
                pooled,
            })),
            tally: None,
            depth: Cell::new(0),
        })
    }

    /// Counts what the connection sends from now on in `tally` (its lane's).
    pub fn tallied(mut self, tally: DbTally) -> Connection {
        self.tally = Some(tally);
        self
    }

    /// Whether it reaches PostgreSQL through a pooler in transaction mode,
    /// where only a transaction's own settings hold.
    pub fn pooled(&self) -> bool {
        match &self.engine {
            Engine::Sqlite(_) => false,
            Engine::Postgres(pg) => pg.pooled,
        }
    }

    /// The engine this connection speaks to.
    pub fn dialect(&self) -> Dialect {
        match &self.engine {
            Engine::Sqlite(_) => Dialect::Sqlite,
            Engine::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The SQLite connection underneath, for what only SQLite has
    /// (pragmas, the progress handler).
    pub fn as_sqlite(&self) -> Option<&rusqlite::Connection> {
        match &self.engine {
            Engine::Sqlite(conn) => Some(conn),
            Engine::Postgres(_) => None,
        }
    }

    /// The SQLite connection underneath, to change (the progress handler).
    pub fn as_sqlite_mut(&mut self) -> Option<&mut rusqlite::Connection> {
        match &mut self.engine {
            Engine::Sqlite(conn) => Some(conn),
            Engine::Postgres(_) => None,
        }
    }

    /// What stops the statement this connection runs from another thread
    /// (PostgreSQL; SQLite's reads are stopped by their progress handler).
    pub fn canceller(&self) -> Option<Canceller> {
        match &self.engine {
            Engine::Sqlite(_) => None,
            Engine::Postgres(pg) => Some(Canceller {
                token: pg.client.borrow().cancel_token(),
                tls: pg.tls.clone(),
            }),
        }
    }

    /// Whether the connection is known to be lost (PostgreSQL's server
    /// went away); an SQLite connection never is.
    pub fn is_lost(&self) -> bool {
        match &self.engine {
            Engine::Sqlite(_) => false,
            Engine::Postgres(pg) => pg.client.borrow().is_closed(),
        }
    }

    /// Rows changed since the connection opened (on PostgreSQL, failed
    /// statements count too: they abort the transaction).
    pub fn total_changes(&self) -> u64 {
        match &self.engine {
            Engine::Sqlite(conn) => conn.total_changes(),
            Engine::Postgres(pg) => pg.changes.get(),
        }
    }

    /// Prepares `sql`, or finds it prepared before.
    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>> {
        let prepared = match &self.engine {
            Engine::Sqlite(conn) => Prepared::Sqlite(conn.prepare_cached(sql)?),
            Engine::Postgres(pg) => {
                if let Some(tally) = &self.tally
                    && !pg.pooled
                    && !pg.statements.borrow().contains_key(sql)
                {
                    // Preparing is a round trip of its own.
                    tally.round_trips.inc();
                }
                Prepared::Postgres(pg, pg.statement(sql)?, sql.contains("RETURNING"))
            }
        };
        Ok(Statement {
            prepared,
            tally: self.tally.as_ref(),
        })
    }

    /// Runs one statement.
    pub fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    /// Runs one statement and reads its first row.
    pub fn query_row<T, P: Params>(
        &self,
        sql: &str,
        params: P,
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.prepare_cached(sql)?.query_row(params, f)
    }

    /// Runs statements without parameters, separated by `;`.
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        count_sent(self.tally.as_ref(), self.dialect());
        match &self.engine {
            Engine::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Engine::Postgres(pg) => pg.batch(sql),
        }
    }

    /// Inserts `rows` (their values in `columns`' order) into `into`
    /// (`table (column, …)`). PostgreSQL: one statement whatever their
    /// count, each column bound as one typed array and the rows read back
    /// with `unnest` (no limit on parameters, one text to prepare). SQLite:
    /// the cached single-row statement once per row, in process (no round
    /// trip to save).
    pub fn insert_rows(&self, into: &str, columns: &[Column], rows: &[Vec<Value>]) -> Result<()> {
        let texts = InsertTexts::new(into, columns);
        self.apply_rows(&texts.sqlite, &texts.postgres, columns, rows)
    }

    /// Applies each part's rows as [`Connection::apply_rows`] does, and on
    /// PostgreSQL all of them by one statement: each part's statement
    /// becomes a data-modifying `WITH` query of it (`… RETURNING 1`, its
    /// `$n` renumbered after the parts before it), and the statement
    /// answers the rows they changed together. The parts must change
    /// different rows (they see one snapshot; PostgreSQL runs them in no
    /// set order): one part a table. How a group's writes to several
    /// tables cost one round trip.
    pub fn apply_tables(&self, parts: &[RowsFor<'_>]) -> Result<()> {
        let parts: Vec<&RowsFor<'_>> = parts.iter().filter(|part| !part.rows.is_empty()).collect();
        let pg = match (&self.engine, parts.as_slice()) {
            (Engine::Postgres(pg), [_, _, ..]) => pg,
            _ => {
                for part in parts {
                    self.apply_rows(part.sqlite, part.postgres, part.columns, part.rows)?;
                }
                return Ok(());
            }
        };
        let (text, bound) = combined(&parts, None)?;
        let statement = self.prepare_cached(&text)?;
        statement.sent();
        let Prepared::Postgres(_, prepared, _) = &statement.prepared else {
            return Err(Error::Conversion("a PostgreSQL statement on SQLite".into()));
        };
        let changed = pg.count_arrays(prepared, &bound)?;
        pg.changes
            .set(pg.changes.get() + u64::try_from(changed).unwrap_or(0));
        Ok(())
    }

    /// Runs `steps` and commits. On PostgreSQL they and the `COMMIT` are
    /// one flight: sent together, then every answer read — one round trip
    /// whatever their number, so a lock the first takes is held for the
    /// server's work and the commit's flush, never across a round trip.
    /// The commit counts only when the transaction was sound when it
    /// arrived: no statement of it failed before the flight (then no
    /// `COMMIT` is sent, [`Error::RolledBack`]), and every statement of
    /// the flight succeeded (a failed one aborts the transaction, and the
    /// server answers the flight's `COMMIT` with a rollback: the group
    /// fails with that statement's error). On SQLite, one after the other.
    ///
    /// `ahead` (PostgreSQL, not behind a pooler, which would take a
    /// statement after `COMMIT` into a transaction of its own): the next
    /// transaction's first queries, sent after the `COMMIT` in the same
    /// flight — `BEGIN` and the settings, then each query, as
    /// [`Connection::query_flight`] runs them. Answers whether they ran:
    /// their readers have their rows, and the transaction they began stays
    /// open for a write of the next group to adopt
    /// ([`Connection::adopt_ahead`]); unadopted, the next statement rolls
    /// it back first. A query of them failing changes nothing of the
    /// commit's outcome: it answers false and its readers read nothing.
    pub fn commit_flight(&self, steps: &[Step<'_>], ahead: &mut [Query<'_>]) -> Result<bool> {
        let pg = match &self.engine {
            Engine::Sqlite(_) => {
                for step in steps {
                    match step {
                        Step::Execute(sql, values) => {
                            self.execute(sql, *values)?;
                        }
                        Step::Tables(parts, _) => self.apply_tables(parts)?,
                    }
                }
                self.prepare_cached("COMMIT")?.execute([])?;
                return Ok(false);
            }
            Engine::Postgres(pg) => pg,
        };
        if pg.failed.get() {
            return Err(Error::RolledBack);
        }
        let ahead = if pg.pooled { &mut [][..] } else { ahead };
        let (ahead_statements, ahead_binds) = self.flight_queries(ahead)?;
        let ahead_params: Vec<_> = ahead_binds.iter().map(|binds| inferred(binds)).collect();
        // What each step sends: its statement (prepared first when not yet
        // cached, a round trip of its own), its values, its answer.
        let mut flown = Vec::with_capacity(steps.len());
        for step in steps {
            let (text, binds, scalars, arrays, answer) = match step {
                Step::Execute(sql, values) => (
                    (*sql).to_owned(),
                    values.values()?.into_iter().map(PgBind).collect(),
                    Vec::new(),
                    Vec::new(),
                    Answer::Count,
                ),
                Step::Tables(parts, numbering) => {
                    let parts: Vec<&RowsFor<'_>> =
                        parts.iter().filter(|part| !part.rows.is_empty()).collect();
                    if parts.is_empty() {
                        continue;
                    }
                    let (text, arrays) = combined(&parts, numbering.as_ref())?;
                    let scalars = numbering.map(|n| n.params.to_vec()).unwrap_or_default();
                    (text, Vec::new(), scalars, arrays, Answer::Rows)
                }
            };
            let statement = match self.prepare_cached(&text)?.prepared {
                Prepared::Postgres(_, statement, _) => statement,
                Prepared::Sqlite(_) => {
                    return Err(Error::Conversion(
                        "an SQLite statement on PostgreSQL".into(),
                    ));
                }
            };
            flown.push((statement, binds, scalars, arrays, answer));
        }
        let params: Vec<Vec<(&(dyn tokio_postgres::types::ToSql + Sync), Type)>> = flown
            .iter()
            .map(|(_, binds, scalars, arrays, _)| {
                let mut params = inferred(binds);
                params.extend(
                    scalars
                        .iter()
                        .map(|n| (n as &(dyn tokio_postgres::types::ToSql + Sync), Type::INT8)),
                );
                params.extend(typed_arrays(arrays));
                params
            })
            .collect();
        if let Some(tally) = &self.tally {
            let ahead = if ahead.is_empty() { 0 } else { ahead.len() + 1 };
            tally.statements.inc_by((flown.len() + 1 + ahead) as u64);
            tally.round_trips.inc();
        }
        let (begun, answers, committed, (ahead_begun, ahead_answers)) = {
            let client = pg.client.borrow();
            let opening = pg.opening.take();
            pg.wait(async {
                let first = begun(&client, pg, opening);
                let sent = futures_util::future::join_all(flown.iter().zip(&params).map(
                    |((statement, _, _, _, answer), params)| {
                        call(&client, statement, params, *answer)
                    },
                ));
                // Each future sends its messages when first polled, and a
                // join polls them in order: the `COMMIT`, then the next
                // transaction's `BEGIN` and queries.
                let opened = begun(
                    &client,
                    pg,
                    if ahead_statements.is_empty() {
                        Opening::Nothing
                    } else {
                        Opening::Begin
                    },
                );
                let read = futures_util::future::join_all(
                    ahead_statements
                        .iter()
                        .zip(&ahead_params)
                        .map(|(statement, params)| call(&client, statement, params, Answer::Rows)),
                );
                futures_util::future::join4(
                    first,
                    sent,
                    client.batch_execute("COMMIT"),
                    futures_util::future::join(opened, read),
                )
                .await
            })
        };
        if !ahead_statements.is_empty() {
            pg.opening.set(Opening::Again);
        }
        let ahead_rows = ahead_begun.ok().and_then(|()| {
            ahead_answers
                .into_iter()
                .map(|answer| answer.ok().map(|(_, rows)| rows))
                .collect::<Option<Vec<_>>>()
        });
        pg.noted(begun)?;
        for (answer, (_, _, _, _, kind)) in answers.into_iter().zip(&flown) {
            let (count, rows) = pg.noted(answer)?;
            let changed = match kind {
                Answer::Count => count,
                Answer::Rows => rows
                    .first()
                    .map(|row| row.try_get::<_, i64>(0))
                    .transpose()?
                    .map_or(0, |n| u64::try_from(n).unwrap_or(0)),
            };
            pg.changes.set(pg.changes.get() + changed);
        }
        pg.noted(committed)?;
        let Some(ahead_rows) = ahead_rows.filter(|_| !ahead.is_empty()) else {
            return Ok(false);
        };
        for (query, rows) in ahead.iter_mut().zip(&ahead_rows) {
            for row in rows {
                (query.read)(&Row::Postgres(row))?;
            }
        }
        Ok(true)
    }

    /// Ends the transaction the last commit's flight began ahead, if no
    /// statement has been sent since ([`Connection::commit_flight`]): a
    /// `ROLLBACK` of its own, for a writer left with nothing to do, so it
    /// holds nothing while idle. Nothing otherwise.
    pub fn end_ahead(&self) -> Result<()> {
        let Engine::Postgres(pg) = &self.engine else {
            return Ok(());
        };
        if pg.opening.get() != Opening::Again {
            return Ok(());
        }
        pg.opening.set(Opening::Nothing);
        count_sent(self.tally.as_ref(), self.dialect());
        pg.batch("ROLLBACK")
    }

    /// Adopts the transaction the last commit's flight opened ahead
    /// (see [`Connection::commit_flight`]): answers whether it is still
    /// open, untouched — no statement sent since, no new session — so
    /// that what its queries read stands, under whatever they took; the
    /// next statement then runs in it. False otherwise (and always on
    /// SQLite).
    pub fn adopt_ahead(&self) -> bool {
        match &self.engine {
            Engine::Postgres(pg) if pg.opening.get() == Opening::Again => {
                pg.opening.set(Opening::Nothing);
                true
            }
            _ => false,
        }
    }

    /// The PostgreSQL statements of `queries` (each prepared the first
    /// time, a round trip of its own) and their values bound, as a flight
    /// sends them.
    fn flight_queries<'q>(
        &self,
        queries: &'q [Query<'_>],
    ) -> Result<(Vec<PgStatement>, Vec<Vec<PgBind<'q>>>)> {
        let mut statements = Vec::with_capacity(queries.len());
        let mut values = Vec::with_capacity(queries.len());
        for query in queries {
            match self.prepare_cached(query.sql)?.prepared {
                Prepared::Postgres(_, statement, _) => statements.push(statement),
                Prepared::Sqlite(_) => {
                    return Err(Error::Conversion(
                        "an SQLite statement on PostgreSQL".into(),
                    ));
                }
            }
            values.push(query.params.values()?.into_iter().map(PgBind).collect());
        }
        Ok((statements, values))
    }

    /// Runs `queries` in order and hands each one's rows to its reader. On
    /// PostgreSQL they are one flight — sent together, then every answer
    /// read: one round trip whatever their number — and the server runs
    /// each after the one before has finished, so each sees what was
    /// committed before it began, after every lock the ones before it
    /// took (in READ COMMITTED a statement's snapshot is taken when it
    /// starts). A failed query fails them all with its error (PostgreSQL
    /// aborts the transaction: those after it fail too). On SQLite, one
    /// after the other.
    pub fn query_flight(&self, queries: &mut [Query<'_>]) -> Result<()> {
        let pg = match &self.engine {
            Engine::Sqlite(_) => {
                for query in queries.iter_mut() {
                    let mut statement = self.prepare_cached(query.sql)?;
                    let mut rows = statement.query(ParamsOf(query.params))?;
                    while let Some(row) = rows.next()? {
                        (query.read)(&row)?;
                    }
                }
                return Ok(());
            }
            Engine::Postgres(pg) => pg,
        };
        let (statements, binds) = self.flight_queries(queries)?;
        let params: Vec<_> = binds.iter().map(|binds| inferred(binds)).collect();
        if let Some(tally) = &self.tally {
            tally.statements.inc_by(queries.len() as u64);
            tally.round_trips.inc();
        }
        let (begun, answers) =
            {
                let client = pg.client.borrow();
                let opening = pg.opening.take();
                pg.wait(async {
                    let begun = begun(&client, pg, opening);
                    let sent =
                        futures_util::future::join_all(statements.iter().zip(&params).map(
                            |(statement, params)| call(&client, statement, params, Answer::Rows),
                        ));
                    futures_util::future::join(begun, sent).await
                })
            };
        pg.noted(begun)?;
        let answers = answers
            .into_iter()
            .map(|answer| pg.noted(answer).map(|(_, rows)| rows))
            .collect::<Result<Vec<_>>>()?;
        for (query, rows) in queries.iter_mut().zip(&answers) {
            for row in rows {
                (query.read)(&Row::Postgres(row))?;
            }
        }
        Ok(())
    }

    /// Applies `rows` (their values in `columns`' order) by a statement of
    /// each engine's: on SQLite `sqlite`, binding one row's values as
    /// `?1`, `?2` …, once per row; on PostgreSQL `postgres` once, binding
    /// each column as one typed array `$1`, `$2` … (for `unnest`). How a
    /// group's changes of many rows of a table become one statement.
    pub fn apply_rows(
        &self,
        sqlite: &str,
        postgres: &str,
        columns: &[Column],
        rows: &[Vec<Value>],
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let pg = match &self.engine {
            Engine::Sqlite(_) => {
                let mut statement = self.prepare_cached(sqlite)?;
                for row in rows {
                    statement.execute(row.as_slice())?;
                }
                return Ok(());
            }
            Engine::Postgres(pg) => pg,
        };
        let statement = self.prepare_cached(postgres)?;
        statement.sent();
        let bound: Vec<PgArray<'_>> = columns
            .iter()
            .enumerate()
            .map(|(i, column)| {
                column
                    .array(rows.iter().map(|row| row.get(i)))
                    .map(|array| PgArray(array, *column, rows.len()))
            })
            .collect::<Result<_>>()?;
        let Prepared::Postgres(_, prepared, _) = &statement.prepared else {
            return Err(Error::Conversion("a PostgreSQL statement on SQLite".into()));
        };
        let changed = pg.execute_arrays(prepared, &bound)?;
        pg.changes.set(pg.changes.get() + changed);
        Ok(())
    }

    /// Starts a write transaction: SQLite's `BEGIN IMMEDIATE` takes the
    /// write lock at once; PostgreSQL takes row locks as it writes, with
    /// the connection's transaction settings, its `BEGIN` sent with the
    /// transaction's first statement (one flight). A PostgreSQL connection
    /// lost since the last transaction (the server restarted) connects
    /// again first.
    pub fn begin(&self) -> Result<()> {
        match &self.engine {
            Engine::Sqlite(_) => self.execute_batch("BEGIN IMMEDIATE"),
            Engine::Postgres(pg) => {
                pg.reconnect_if_lost()?;
                pg.failed.set(false);
                // Sent with the transaction's first statement; a
                // transaction opened ahead stays open for a write to adopt.
                if pg.opening.get() != Opening::Again {
                    if let Some(tally) = &self.tally {
                        tally.statements.inc();
                    }
                    pg.opening.set(Opening::Begin);
                }
                Ok(())
            }
        }
    }

    /// A transaction on a shared reference, rolled back unless committed;
    /// inside another one, a savepoint of it. On SQLite it is `BEGIN
    /// IMMEDIATE`: a deferred transaction that reads and then writes while
    /// another connection (a running server beside an operator command)
    /// commits fails at once with `SQLITE_BUSY`, where an immediate one
    /// waits its turn for the write lock (the busy timeout).
    pub fn unchecked_transaction(&self) -> Result<Transaction<'_>> {
        let depth = self.depth.get();
        match (&self.engine, depth) {
            (_, 1..) => self.execute_batch(&format!("SAVEPOINT nested_{depth}"))?,
            (Engine::Sqlite(_), 0) => self.execute_batch("BEGIN IMMEDIATE")?,
            (Engine::Postgres(pg), 0) => {
                pg.failed.set(false);
                self.execute_batch(&pg.begin)?;
            }
        }
        self.depth.set(depth + 1);
        Ok(Transaction {
            conn: self,
            depth,
            done: false,
        })
    }

    /// Closes the connection.
    pub fn close(self) -> Result<()> {
        match self.engine {
            Engine::Sqlite(conn) => conn.close().map_err(|(_, e)| Error::Sqlite(e)),
            Engine::Postgres(pg) => {
                // The client, then its driver: the session ends with
                // Terminate (see `Driver`).
                drop(pg);
                Ok(())
            }
        }
    }
}

/// One table's part of [`Connection::apply_tables`]: the statements and
/// rows [`Connection::apply_rows`] takes.
#[derive(Debug, Clone, Copy)]
pub struct RowsFor<'a> {
    pub sqlite: &'a str,
    pub postgres: &'a str,
    pub columns: &'a [Column],
    pub rows: &'a [Vec<Value>],
}

/// One query of [`Connection::query_flight`]: its statement, its
/// parameters, and what reads each of its rows.
pub struct Query<'a> {
    pub sql: &'a str,
    pub params: &'a dyn Params,
    pub read: &'a mut dyn FnMut(&Row<'_>) -> Result<()>,
}

impl fmt::Debug for Query<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Query").field("sql", &self.sql).finish()
    }
}

/// Parameters given as a trait object, as parameters.
struct ParamsOf<'a>(&'a dyn Params);

impl Params for ParamsOf<'_> {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        self.0.values()
    }
}

/// One step of [`Connection::commit_flight`].
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// A statement and its parameters.
    Execute(&'a str, &'a [Value]),
    /// Rows of several tables, written as [`Connection::apply_tables`]
    /// writes them (on PostgreSQL always one statement), with the
    /// provisional numbers of their [`Column::Numbered`] columns made real
    /// on the server when a numbering is given.
    Tables(&'a [RowsFor<'a>], Option<Numbering<'a>>),
}

/// How a statement of several tables' rows ([`Step::Tables`]) numbers
/// them on the server: a column [`Column::Numbered`]`(name)` holds
/// provisional numbers from `from` up, and each is written as `base +
/// (n − from)`, `base` being the column `name` of the one row `bases`
/// answers (with `params` as its `$1`, `$2` … of type `bigint`), read by
/// the same statement. So numbers a statement earlier in the transaction
/// handed out (a sequencer's `UPDATE`) reach the rows without crossing
/// the network: the two can be sent in one flight. Values below `from`
/// are kept.
#[derive(Debug, Clone, Copy)]
pub struct Numbering<'a> {
    pub bases: &'a str,
    pub params: &'a [i64],
    pub from: i64,
}

/// The one PostgreSQL statement writing `parts` (not empty): each part's
/// statement a data-modifying `WITH` query (`… RETURNING 1`, its `$n`
/// renumbered after the parts before it), answering how many rows they
/// changed together; with a numbering, first the query `bases` (its
/// parameters before every part's), and each part's numbered columns
/// rewritten from it ([`numbered_part`]). And the arrays to bind, in
/// order.
fn combined<'v>(
    parts: &[&'v RowsFor<'v>],
    numbering: Option<&Numbering<'_>>,
) -> Result<(String, Vec<PgArray<'v>>)> {
    let mut queries = Vec::with_capacity(parts.len() + 1);
    let mut counted = Vec::with_capacity(parts.len());
    let mut offset = 0;
    if let Some(numbering) = numbering {
        queries.push(format!("bases AS ({})", numbering.bases));
        offset = numbering.params.len();
    }
    for (i, part) in parts.iter().enumerate() {
        let text = match numbering {
            Some(numbering) => numbered_part(part, numbering)?,
            None => part.postgres.to_owned(),
        };
        queries.push(format!(
            "w{i} AS ({} RETURNING 1)",
            renumbered(&text, offset)
        ));
        counted.push(format!("SELECT 1 FROM w{i}"));
        offset += part.columns.len();
    }
    // One count over every part's rows, not an aggregate a part: each
    // was one more node for the executor to start every group.
    let text = format!(
        "WITH {} SELECT count(*) FROM ({}) AS w",
        queries.join(", "),
        counted.join(" UNION ALL ")
    );
    let mut bound: Vec<PgArray<'v>> = Vec::with_capacity(offset);
    for part in parts {
        for (i, column) in part.columns.iter().enumerate() {
            let array = column.array(part.rows.iter().map(|row| row.get(i)))?;
            bound.push(PgArray(array, *column, part.rows.len()));
        }
    }
    Ok((text, bound))
}

/// A part's statement with its [`Column::Numbered`] and
/// [`Column::Computed`] columns rewritten by `numbering` (`bases`).
///
/// A part inserting its arrays as they are ([`InsertTexts`]: `… SELECT
/// unnest(…), unnest(…) …`) selects every column from them, a numbered
/// column's value computed in the projection (`t.v`, the column
/// [`Column::Computed`]'s expression reads, at most one a part). Any other
/// part has each numbered array replaced by a subquery numbering it in
/// order: an aggregate, a sort and a second scan of the array each, which
/// the projection spares every group's tail.
fn numbered_part(part: &RowsFor<'_>, numbering: &Numbering<'_>) -> Result<String> {
    let from = numbering.from;
    let numbered = |name: &str, v: &str| {
        format!("CASE WHEN {v} >= {from} THEN {v} - {from} + b.{name} ELSE {v} END")
    };
    if !part
        .columns
        .iter()
        .any(|column| matches!(column, Column::Numbered(_) | Column::Computed(..)))
    {
        return Ok(part.postgres.to_owned());
    }
    let unnested = unnested(part.columns);
    let inserted = format!("SELECT {}", unnested.join(", "));
    if let Some(into) = part.postgres.strip_suffix(&inserted) {
        let mut names = Vec::with_capacity(part.columns.len());
        let mut values = Vec::with_capacity(part.columns.len());
        let mut bases = "";
        let mut joins = "";
        for (i, column) in part.columns.iter().enumerate() {
            let name = format!("c{}", i + 1);
            match column {
                Column::Numbered(base) => {
                    bases = " CROSS JOIN bases AS b";
                    values.push(numbered(base, &format!("t.{name}")));
                    names.push(name);
                }
                Column::Computed(expression, join) => {
                    if names.iter().any(|n| n == "v") {
                        return Err(Error::Conversion(format!(
                            "two computed columns in {}",
                            part.postgres
                        )));
                    }
                    values.push((*expression).to_owned());
                    joins = join;
                    names.push("v".to_owned());
                }
                _ => {
                    values.push(format!("t.{name}"));
                    names.push(name);
                }
            }
        }
        let columns: Vec<String> = unnested
            .iter()
            .zip(&names)
            .map(|(unnest, name)| format!("{unnest} AS {name}"))
            .collect();
        return Ok(format!(
            "{into}SELECT {} FROM (SELECT {}) AS t{bases}{joins}",
            values.join(", "),
            columns.join(", ")
        ));
    }
    let mut text = part.postgres.to_owned();
    for (at, column) in part.columns.iter().enumerate() {
        let (value, from) = match column {
            Column::Numbered(name) => (numbered(name, "t.v"), ", bases AS b"),
            Column::Computed(expression, join) => ((*expression).to_owned(), *join),
            _ => continue,
        };
        let array = format!("${}::bigint[]", at + 1);
        if !text.contains(&array) {
            return Err(Error::Conversion(format!(
                "a numbered column is not bound as {array} in {}",
                part.postgres
            )));
        }
        text = text.replace(
            &array,
            &format!(
                "(SELECT array_agg({value} ORDER BY t.o) \
                 FROM unnest({array}) WITH ORDINALITY AS t(v, o){from})"
            ),
        );
    }
    Ok(text)
}

/// The statements of [`Connection::insert_rows`] for a table
/// (`table (column, …)`) of `columns`: SQLite's single-row insert and
/// PostgreSQL's insert from `unnest` of one array a column.
#[derive(Debug, Clone)]
pub struct InsertTexts {
    pub sqlite: String,
    pub postgres: String,
}

impl InsertTexts {
    pub fn new(into: &str, columns: &[Column]) -> InsertTexts {
        let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        InsertTexts {
            sqlite: format!("INSERT INTO {into} VALUES ({})", marks.join(", ")),
            postgres: format!("INSERT INTO {into} SELECT {}", unnested(columns).join(", ")),
        }
    }

    /// Its part of [`Connection::apply_tables`] with `rows`.
    pub fn rows<'a>(&'a self, columns: &'a [Column], rows: &'a [Vec<Value>]) -> RowsFor<'a> {
        RowsFor {
            sqlite: &self.sqlite,
            postgres: &self.postgres,
            columns,
            rows,
        }
    }
}

/// `unnest($n::type[])` of each column's array, to select side by side:
/// set-returning functions in a select list run in step (the longest
/// array's length, a shorter one padded with nulls, as `unnest` of several
/// arrays in `FROM` does), without the `FROM` form's copy of every array
/// into a tuple store first.
fn unnested(columns: &[Column]) -> Vec<String> {
    columns
        .iter()
        .enumerate()
        .map(|(i, column)| format!("unnest(${}::{}[])", i + 1, column.pg_type()))
        .collect()
}

/// `sql` with each parameter `$n` written `$(n + offset)`.
fn renumbered(sql: &str, offset: usize) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + offset).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// A column of rows bound as one array ([`Connection::insert_rows`]).
/// Its `Debug` shows only its type and length, as [`PgBind`]'s shows only
/// a kind: the PostgreSQL client logs parameters at debug level.
struct PgArray<'v>(
    Box<dyn tokio_postgres::types::ToSql + Sync + 'v>,
    Column,
    usize,
);

impl fmt::Debug for PgArray<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} × {}>", self.2, self.1.pg_type())
    }
}

impl tokio_postgres::types::ToSql for PgArray<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        self.0.to_sql_checked(ty, out)
    }

    /// Whatever the column's array accepts, which `to_sql_checked` asks it.
    fn accepts(_: &Type) -> bool {
        true
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut tokio_postgres::types::private::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        self.0.to_sql_checked(ty, out)
    }
}

/// The type of a column of rows inserted together
/// ([`Connection::insert_rows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Integer,
    Real,
    Text,
    Blob,
    /// An integer numbered on the server by [`Numbering`] (in a
    /// [`Step::Tables`] that gives one; elsewhere, and on SQLite, an
    /// integer as it is): the name of its base's column.
    Numbered(&'static str),
    /// An integer rewritten on the server, in a [`Step::Tables`] that
    /// gives a [`Numbering`], as an SQL expression (the first) of the value
    /// `t.v` and of what the join (the second, after the `unnest` of the
    /// arrays as `t`, see `numbered_part`) brings — reading what the
    /// flight's statements before wrote; elsewhere, and on SQLite, an
    /// integer as it is.
    Computed(&'static str, &'static str),
}

impl Column {
    /// The type of an array of the column's values.
    fn pg_array_type(self) -> Type {
        match self {
            Column::Integer | Column::Numbered(_) | Column::Computed(..) => Type::INT8_ARRAY,
            Column::Real => Type::FLOAT8_ARRAY,
            Column::Text => Type::TEXT_ARRAY,
            Column::Blob => Type::BYTEA_ARRAY,
        }
    }

    fn pg_type(self) -> &'static str {
        match self {
            Column::Integer | Column::Numbered(_) | Column::Computed(..) => "bigint",
            Column::Real => "double precision",
            Column::Text => "text",
            Column::Blob => "bytea",
        }
    }

    /// The column's values as one PostgreSQL array (`None`: a row without
    /// the column).
    fn array<'v>(
        self,
        values: impl Iterator<Item = Option<&'v Value>>,
    ) -> Result<Box<dyn tokio_postgres::types::ToSql + Sync + 'v>> {
        let wrong = |value: Option<&Value>| {
            Error::Conversion(format!(
                "{} in a column of {}",
                value.map_or("a missing value", |v| match v {
                    Value::Null => "null",
                    Value::Integer(_) => "an integer",
                    Value::Real(_) => "a real",
                    Value::Text(_) => "text",
                    Value::Blob(_) => "a blob",
                }),
                self.pg_type()
            ))
        };
        Ok(match self {
            Column::Integer | Column::Numbered(_) | Column::Computed(..) => Box::new(
                values
                    .map(|value| match value {
                        Some(Value::Null) => Ok(None),
                        Some(Value::Integer(i)) => Ok(Some(*i)),
                        other => Err(wrong(other)),
                    })
                    .collect::<Result<Vec<Option<i64>>>>()?,
            ),
            Column::Real => Box::new(
                values
                    .map(|value| match value {
                        Some(Value::Null) => Ok(None),
                        Some(Value::Real(f)) => Ok(Some(*f)),
                        #[allow(clippy::cast_precision_loss, reason = "SQLite's own conversion")]
                        Some(Value::Integer(i)) => Ok(Some(*i as f64)),
                        other => Err(wrong(other)),
                    })
                    .collect::<Result<Vec<Option<f64>>>>()?,
            ),
            Column::Text => Box::new(
                values
                    .map(|value| match value {
                        Some(Value::Null) => Ok(None),
                        Some(Value::Text(s)) => Ok(Some(s.as_str())),
                        other => Err(wrong(other)),
                    })
                    .collect::<Result<Vec<Option<&str>>>>()?,
            ),
            Column::Blob => Box::new(
                values
                    .map(|value| match value {
                        Some(Value::Null) => Ok(None),
                        Some(Value::Blob(b)) => Ok(Some(b.as_slice())),
                        other => Err(wrong(other)),
                    })
                    .collect::<Result<Vec<Option<&[u8]>>>>()?,
            ),
        })
    }
}

/// A transaction: committed by [`Transaction::commit`], rolled back when
/// dropped without it.
#[derive(Debug)]
pub struct Transaction<'c> {
    conn: &'c Connection,
    /// Transactions open around it: 0 for a transaction, more for a
    /// savepoint.
    depth: u32,
    done: bool,
}

impl Transaction<'_> {
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        self.conn.depth.set(self.depth);
        match self.depth {
            0 => self.conn.execute_batch("COMMIT"),
            depth => self
                .conn
                .execute_batch(&format!("RELEASE SAVEPOINT nested_{depth}")),
        }
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.conn.depth.set(self.depth);
            let _ = match self.depth {
                0 => self.conn.execute_batch("ROLLBACK"),
                depth => self.conn.execute_batch(&format!(
                    "ROLLBACK TO SAVEPOINT nested_{depth}; RELEASE SAVEPOINT nested_{depth}"
                )),
            };
        }
    }
}

impl PgStatement {
    /// Whether it only reads: a statement prepared by name returns columns
    /// (a `SELECT`); one sent whole, whose columns are not known before it
    /// runs, starts with `SELECT` or `SHOW` (anything else counts as a
    /// change, the side that rolls a failed write's group back).
    fn reads_only(&self) -> bool {
        match self {
            PgStatement::Named(statement) => !statement.columns().is_empty(),
            PgStatement::Unnamed(text) => {
                let first = text
                    .trim_start()
                    .split(|c: char| !c.is_ascii_alphabetic())
                    .next()
                    .unwrap_or("");
                first.eq_ignore_ascii_case("SELECT") || first.eq_ignore_ascii_case("SHOW")
            }
        }
    }
}

enum Prepared<'c> {
    Sqlite(rusqlite::CachedStatement<'c>),
    /// The connection, the statement, and whether it returns changed rows.
    Postgres(&'c Pg, PgStatement, bool),
}

/// Counts one statement sent, and on PostgreSQL its round trip.
fn count_sent(tally: Option<&DbTally>, dialect: Dialect) {
    if let Some(tally) = tally {
        tally.statements.inc();
        if dialect == Dialect::Postgres {
            tally.round_trips.inc();
        }
    }
}

/// A prepared statement.
pub struct Statement<'c> {
    prepared: Prepared<'c>,
    /// The counters of its connection's lane, if counted.
    tally: Option<&'c DbTally>,
}

impl fmt::Debug for Statement<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Statement")
    }
}

impl Statement<'_> {
    /// The names of the columns it returns; `None` for a statement sent
    /// whole ([`PgStatement::Unnamed`]), whose columns are known once it
    /// ran.
    pub fn column_names(&self) -> Option<Vec<&str>> {
        match &self.prepared {
            Prepared::Sqlite(statement) => Some(statement.column_names().collect()),
            Prepared::Postgres(_, PgStatement::Named(statement), _) => {
                Some(statement.columns().iter().map(|c| c.name()).collect())
            }
            Prepared::Postgres(_, PgStatement::Unnamed(_), _) => None,
        }
    }

    /// Counts it sent.
    fn sent(&self) {
        let dialect = match self.prepared {
            Prepared::Sqlite(_) => Dialect::Sqlite,
            Prepared::Postgres(..) => Dialect::Postgres,
        };
        count_sent(self.tally, dialect);
    }

    /// Runs it; answers how many rows it changed.
    pub fn execute<P: Params>(&mut self, params: P) -> Result<usize> {
        self.sent();
        match &mut self.prepared {
            Prepared::Sqlite(statement) => {
                let values = params.values()?;
                let binds: Vec<SqliteBind<'_>> = values.into_iter().map(SqliteBind).collect();
                Ok(statement.execute(rusqlite::params_from_iter(binds.iter()))?)
            }
            Prepared::Postgres(pg, statement, returning) => {
                let changed = pg.execute(statement, &params)?;
                // PostgreSQL counts the rows a SELECT returned as well.
                if *returning || !statement.reads_only() {
                    pg.changes.set(pg.changes.get() + changed);
                }
                usize::try_from(changed).map_err(|e| Error::Conversion(e.to_string()))
            }
        }
    }

    /// Runs it and reads every row.
    pub fn query<P: Params>(&mut self, params: P) -> Result<Rows<'_>> {
        self.sent();
        match &mut self.prepared {
            Prepared::Sqlite(statement) => {
                let values = params.values()?;
                let binds: Vec<SqliteBind<'_>> = values.into_iter().map(SqliteBind).collect();
                Ok(Rows(RowsInner::Sqlite(
                    statement.query(rusqlite::params_from_iter(binds.iter()))?,
                )))
            }
            Prepared::Postgres(pg, statement, returning) => {
                let rows = pg.query(statement, &params)?;
                if *returning {
                    pg.changes.set(pg.changes.get() + rows.len() as u64);
                }
                Ok(Rows(RowsInner::Postgres(rows, 0)))
            }
        }
    }

    /// Runs it and reads its first row; no row is
    /// [`Error::QueryReturnedNoRows`].
    pub fn query_row<T, P: Params>(
        &mut self,
        params: P,
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut rows = self.query(params)?;
        match rows.next()? {
            Some(row) => f(&row),
            None => Err(Error::QueryReturnedNoRows),
        }
    }

    /// Runs it and reads every row with `f`.
    pub fn query_map<T, P: Params>(
        &mut self,
        params: P,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<std::vec::IntoIter<Result<T>>> {
        let mut rows = self.query(params)?;
        let mut mapped = Vec::new();
        while let Some(row) = rows.next()? {
            mapped.push(f(&row));
        }
        Ok(mapped.into_iter())
    }
}

enum RowsInner<'s> {
    Sqlite(rusqlite::Rows<'s>),
    /// The rows, and how many were read.
    Postgres(Vec<tokio_postgres::Row>, usize),
}

/// The rows of a query, read one at a time.
pub struct Rows<'s>(RowsInner<'s>);

impl fmt::Debug for Rows<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Rows")
    }
}

impl Rows<'_> {
    /// The next row, if any.
    #[allow(
        clippy::should_implement_trait,
        reason = "a lending iterator: a row borrows the rows, as rusqlite's does"
    )]
    pub fn next(&mut self) -> Result<Option<Row<'_>>> {
        match &mut self.0 {
            RowsInner::Sqlite(rows) => Ok(rows.next()?.map(Row::Sqlite)),
            RowsInner::Postgres(rows, read) => {
                let row = rows.get(*read).map(Row::Postgres);
                *read += 1;
                Ok(row)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::types::{FromSql, Value, ValueRef};
    use super::*;

    #[test]
    fn a_part_of_a_combined_statement_numbers_its_arrays_after_those_before() {
        assert_eq!(
            renumbered(
                "SELECT * FROM unnest($1::text[], $2::bigint[]) WHERE $12 = $1",
                3
            ),
            "SELECT * FROM unnest($4::text[], $5::bigint[]) WHERE $15 = $4"
        );
        assert_eq!(renumbered("no parameters", 7), "no parameters");
        assert_eq!(renumbered("a bare $ stays", 2), "a bare $ stays");
    }

    #[test]
    fn an_inserted_part_numbers_its_columns_in_one_projection() {
        const COLUMNS: [Column; 3] = [
            Column::Text,
            Column::Numbered("leaf"),
            Column::Computed("t.v + s.base", " LEFT JOIN s ON s.id = t.v"),
        ];
        let texts = InsertTexts::new("x (a, b, c)", &COLUMNS);
        let rows = [vec![
            Value::Text("a".into()),
            Value::Integer(9),
            Value::Integer(8),
        ]];
        let numbering = Numbering {
            bases: "SELECT 1 AS leaf",
            params: &[],
            from: 5,
        };
        assert_eq!(
            numbered_part(&texts.rows(&COLUMNS, &rows), &numbering).unwrap(),
            "INSERT INTO x (a, b, c) SELECT t.c1, \
             CASE WHEN t.c2 >= 5 THEN t.c2 - 5 + b.leaf ELSE t.c2 END, t.v + s.base \
             FROM (SELECT unnest($1::text[]) AS c1, unnest($2::bigint[]) AS c2, \
             unnest($3::bigint[]) AS v) AS t \
             CROSS JOIN bases AS b LEFT JOIN s ON s.id = t.v"
        );
        let updated = RowsFor {
            sqlite: "",
            postgres: "UPDATE x SET b = d.b FROM unnest($1::text[], $2::bigint[]) AS d(a, b) \
                       WHERE x.a = d.a",
            columns: &COLUMNS[..2],
            rows: &rows,
        };
        assert_eq!(
            numbered_part(&updated, &numbering).unwrap(),
            "UPDATE x SET b = d.b FROM unnest($1::text[], \
             (SELECT array_agg(CASE WHEN t.v >= 5 THEN t.v - 5 + b.leaf ELSE t.v END \
             ORDER BY t.o) FROM unnest($2::bigint[]) WITH ORDINALITY AS t(v, o), bases AS b)) \
             AS d(a, b) WHERE x.a = d.a"
        );
        let twice = [COLUMNS[2], COLUMNS[2]];
        let texts = InsertTexts::new("y (a, b)", &twice);
        assert!(numbered_part(&texts.rows(&twice, &rows), &numbering).is_err());
    }

    #[test]
    fn a_flight_hands_each_query_its_own_rows_in_order() {
        let conn = Connection::sqlite(rusqlite::Connection::open_in_memory().unwrap());
        conn.execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3);")
            .unwrap();
        let (mut small, mut large) = (Vec::new(), Vec::new());
        let mut read_small = |row: &Row<'_>| {
            small.push(row.get::<_, i64>(0)?);
            Ok(())
        };
        let mut read_large = |row: &Row<'_>| {
            large.push(row.get::<_, i64>(0)?);
            Ok(())
        };
        let (below, above) = ([3_i64], [1_i64]);
        conn.query_flight(&mut [
            Query {
                sql: "SELECT n FROM t WHERE n < ?1 ORDER BY n",
                params: &below,
                read: &mut read_small,
            },
            Query {
                sql: "SELECT n * 10 FROM t WHERE n > ?1 ORDER BY n DESC",
                params: &above,
                read: &mut read_large,
            },
        ])
        .unwrap();
        assert_eq!((small, large), (vec![1, 2], vec![30, 20]));
    }

    #[test]
    fn placeholders_become_postgresql_numbers_outside_quotes() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE b = ?1 AND c = ?12 AND d = ?1"),
            "SELECT a FROM t WHERE b = $1 AND c = $12 AND d = $1"
        );
        assert_eq!(
            numbered("WHERE a = ? AND b = ? LIMIT ?"),
            "WHERE a = $1 AND b = $2 LIMIT $3"
        );
        assert_eq!(
            numbered("SELECT '?' || note FROM t WHERE x = ?"),
            "SELECT '?' || note FROM t WHERE x = $1"
        );
    }

    #[test]
    fn values_read_back_as_written_and_refuse_what_does_not_fit() {
        let conn = Connection::sqlite(rusqlite::Connection::open_in_memory().unwrap());
        conn.execute_batch("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n INTEGER)")
            .unwrap();
        conn.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)",
            params![i64::MAX, 0.25, "text", [1u8, 2, 3], None::<i64>],
        )
        .unwrap();
        let row: (i64, f64, String, Vec<u8>, Option<i64>) = conn
            .query_row("SELECT i, r, s, b, n FROM t", [], |row| {
                Ok((
                    row.get(0)?,
                    row.get("r")?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })
            .unwrap();
        assert_eq!(
            row,
            (i64::MAX, 0.25, "text".to_owned(), vec![1, 2, 3], None)
        );
        // A stored integer too large for the type asked for, and text where
        // a number is asked for, are errors, never truncated.
        let narrow = conn.query_row("SELECT i FROM t", [], |row| row.get::<_, u32>(0));
        assert!(matches!(narrow, Err(Error::Conversion(_))), "{narrow:?}");
        let text = conn.query_row("SELECT s FROM t", [], |row| row.get::<_, i64>(0));
        assert!(matches!(text, Err(Error::Conversion(_))), "{text:?}");
        assert_eq!(u64::MAX.to_sql().ok(), None);
        assert!(bool::from_sql(ValueRef::Integer(1)).unwrap());
        assert_eq!(
            Value::from_sql(ValueRef::Blob(&[7])).unwrap(),
            Value::Blob(vec![7])
        );
    }

    #[test]
    fn no_row_is_none_only_when_asked() {
        let conn = Connection::sqlite(rusqlite::Connection::open_in_memory().unwrap());
        let none: Option<i64> = conn
            .query_row("SELECT 1 WHERE 0", [], |row| row.get(0))
            .optional()
            .unwrap();
        assert_eq!(none, None);
        assert!(matches!(
            conn.query_row("SELECT 1 WHERE 0", [], |row| row.get::<_, i64>(0)),
            Err(Error::QueryReturnedNoRows)
        ));
    }

    /// The failure an operator command met beside a running server: a
    /// transaction that read, then wrote after the server committed, was
    /// refused with `SQLITE_BUSY` whatever the busy timeout. A transaction
    /// holds the write lock from its start instead, so the other writer
    /// waits for it, and it never has to.
    #[test]
    fn a_transaction_holds_the_write_lock_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let open = || {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.pragma_update(None, "journal_mode", "WAL").unwrap();
            conn
        };
        let operator = Connection::sqlite(open());
        operator
            .execute_batch("CREATE TABLE t (n INTEGER)")
            .unwrap();
        let server = open();
        server.busy_timeout(std::time::Duration::ZERO).unwrap();
        let tx = operator.unchecked_transaction().unwrap();
        let count: i64 = tx
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .unwrap();
        let refused = server.execute("INSERT INTO t VALUES (1)", []);
        assert_eq!(
            refused.unwrap_err().sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy)
        );
        tx.execute("INSERT INTO t VALUES (?1)", params![count])
            .unwrap();
        tx.commit().unwrap();
        server.execute("INSERT INTO t VALUES (2)", []).unwrap();
    }

    #[test]
    fn postgresql_parameters_are_never_printed() {
        let bound = PgBind(ValueRef::Text("vat_root_secret"));
        assert_eq!(format!("{bound:?}"), "<text>");
    }
}
