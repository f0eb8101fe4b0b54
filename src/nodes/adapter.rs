//! The typed node adapter. A node kind declares its name, version, params
//! (its key), *named* inputs and output record ([`Kind`]); the adapter turns
//! it into the engine's untyped [`Job`] — decoding each input by name,
//! encoding the record, prefixing errors with the kind — and into a
//! [`NodeSpec`] whose dependencies are given by the same names. So the order
//! of a node's inputs is written once, in its kind's [`inputs!`] block, and
//! the layout and the job cannot disagree about it.
//!
//! Adding a kind is one file (params, inputs, record, `impl Kind`), its
//! word in [`NodeKind`], plus the line of the layout that lays out its nodes
//! with [`spec`]; the test at the bottom of this file is such a kind, whole.

use std::future::Future;
use std::sync::Arc;

use assay_engine::{Digest, Job, JobCtx, JobFuture, NodeSpec, Output, encode_params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::run::error::NodeError;

pub(crate) use crate::model::kind::NodeKind;

/// One dependency's output, decoded, with the dependency's node key.
#[derive(Debug)]
pub(crate) struct Dep<T> {
    pub(crate) record: T,
    pub(crate) key: Digest,
}

impl<T> std::ops::Deref for Dep<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.record
    }
}

impl<T: DeserializeOwned> Dep<T> {
    /// Decodes input `name` (for the error) from its output bytes.
    /// A record that does not decode is assay's own (its digest held).
    pub(crate) fn decode(name: &str, bytes: &[u8], key: Digest) -> Result<Dep<T>, NodeError> {
        serde_json::from_slice(bytes)
            .map(|record| Dep { record, key })
            .map_err(|e| NodeError::internal(format!("input `{name}`: {e}")))
    }
}

/// One element of an [`inputs!`] tail: one input, or a pair of inputs that
/// come together (a judge's reviewed session and its grade).
pub(crate) trait Tail: Sized {
    /// The node names of its inputs.
    type Names;
    /// How many inputs it takes.
    const WIDTH: usize;
    fn push_names(names: Self::Names, all: &mut Vec<String>);
    /// Decodes it, named `name` (for the error), from its `WIDTH` inputs.
    fn decode(name: &str, inputs: &[Arc<Vec<u8>>], keys: &[Digest]) -> Result<Self, NodeError>;
}

impl<T: DeserializeOwned> Tail for Dep<T> {
    type Names = String;
    const WIDTH: usize = 1;
    fn push_names(name: String, all: &mut Vec<String>) {
        all.push(name);
    }
    fn decode(name: &str, inputs: &[Arc<Vec<u8>>], keys: &[Digest]) -> Result<Self, NodeError> {
        Dep::decode(name, &inputs[0], keys[0])
    }
}

impl<A: DeserializeOwned, B: DeserializeOwned> Tail for (Dep<A>, Dep<B>) {
    type Names = (String, String);
    const WIDTH: usize = 2;
    fn push_names((a, b): (String, String), all: &mut Vec<String>) {
        all.extend([a, b]);
    }
    fn decode(name: &str, inputs: &[Arc<Vec<u8>>], keys: &[Digest]) -> Result<Self, NodeError> {
        Ok((
            Dep::decode(&format!("{name}.0"), &inputs[0], keys[0])?,
            Dep::decode(&format!("{name}.1"), &inputs[1], keys[1])?,
        ))
    }
}

impl<A: DeserializeOwned, B: DeserializeOwned, C: DeserializeOwned> Tail
    for (Dep<A>, Dep<B>, Dep<C>)
{
    type Names = (String, String, String);
    const WIDTH: usize = 3;
    fn push_names((a, b, c): (String, String, String), all: &mut Vec<String>) {
        all.extend([a, b, c]);
    }
    fn decode(name: &str, inputs: &[Arc<Vec<u8>>], keys: &[Digest]) -> Result<Self, NodeError> {
        Ok((
            Dep::decode(&format!("{name}.0"), &inputs[0], keys[0])?,
            Dep::decode(&format!("{name}.1"), &inputs[1], keys[1])?,
            Dep::decode(&format!("{name}.2"), &inputs[2], keys[2])?,
        ))
    }
}

/// A kind's inputs, by name: decoded from the engine's positional inputs,
/// and named by the layout through [`Inputs::Names`].
pub(crate) trait Inputs: Sized + Send + 'static {
    /// The node name of each input, as the layout gives them.
    type Names;
    fn names(names: Self::Names) -> Vec<String>;
    fn decode(ctx: &JobCtx) -> Result<Self, NodeError>;
}

/// Every input as it came, with its node key, for a kind whose params
/// describe its inputs and that decodes them itself (the release: its
/// `assemble` is shared with `assay verify --bundle`, which has only bytes).
pub(crate) struct Raw(pub(crate) Vec<(Arc<Vec<u8>>, Digest)>);

impl Inputs for Raw {
    type Names = Vec<String>;
    fn names(names: Vec<String>) -> Vec<String> {
        names
    }
    fn decode(ctx: &JobCtx) -> Result<Raw, NodeError> {
        Ok(Raw(ctx
            .inputs
            .iter()
            .cloned()
            .zip(ctx.input_keys.iter().copied())
            .collect()))
    }
}

/// Declares a kind's named inputs: a struct of [`Dep`]s and, beside it, a
/// struct of the same fields holding node names (`<Name>Names`). The field
/// order is the dependency order, here and only here. After the named ones:
/// `; ?extra: T` the one input after them, when the layout gives one (a
/// task's environment, on docker); or `; ..rest: [T]` every input left (a
/// screen's readings), or `; ..rest: [A, B]` them in pairs, each a
/// `(Dep<A>, Dep<B>)` named by a `(String, String)` (a judge's reviewed
/// session and its grade). Not an optional input and a tail: a missing
/// optional input would leave the tail's first in its place.
macro_rules! inputs {
    ($(#[$m:meta])* $vis:vis struct $name:ident / $names:ident {
        $($field:ident: $ty:ty),* $(,)?
        $(; ?$opt:ident: $oty:ty)? $(; ..$tail:ident: [$($tty:ty),+])?
    }) => {
        $(#[$m])*
        #[allow(unused_parens)]
        $vis struct $name {
            $($vis $field: $crate::nodes::adapter::Dep<$ty>,)*
            $($vis $opt: Option<$crate::nodes::adapter::Dep<$oty>>,)?
            $($vis $tail: Vec<($($crate::nodes::adapter::Dep<$tty>),+)>,)?
        }

        /// The node names of the inputs, by name.
        #[allow(unused_parens)]
        $vis struct $names {
            $($vis $field: String,)*
            $($vis $opt: Option<String>,)?
            $($vis $tail: Vec<<($($crate::nodes::adapter::Dep<$tty>),+) as $crate::nodes::adapter::Tail>::Names>,)?
        }

        #[allow(unused_parens)]
        impl $crate::nodes::adapter::Inputs for $name {
            type Names = $names;

            #[allow(unused_variables, unused_mut)]
            fn names(names: $names) -> Vec<String> {
                let mut all = vec![$(names.$field),*];
                $(all.extend(names.$opt);)?
                $(
                    for n in names.$tail {
                        <($($crate::nodes::adapter::Dep<$tty>),+) as $crate::nodes::adapter::Tail>::push_names(n, &mut all);
                    }
                )?
                all
            }

            #[allow(unused_mut)]
            fn decode(ctx: &assay_engine::JobCtx) -> Result<Self, $crate::run::error::NodeError> {
                let mut at = 0usize;
                $(
                    let $field = $crate::nodes::adapter::Dep::decode(
                        stringify!($field),
                        ctx.inputs.get(at).ok_or_else(|| $crate::run::error::NodeError::internal(format!("input `{}` is missing", stringify!($field))))?,
                        ctx.input_keys[at],
                    )?;
                    at += 1;
                )*
                $(
                    let $opt = match ctx.inputs.get(at) {
                        Some(bytes) => {
                            at += 1;
                            Some($crate::nodes::adapter::Dep::decode(
                                stringify!($opt),
                                bytes,
                                ctx.input_keys[at - 1],
                            )?)
                        }
                        None => None,
                    };
                )?
                $(
                    type Each = ($($crate::nodes::adapter::Dep<$tty>),+);
                    let width = <Each as $crate::nodes::adapter::Tail>::WIDTH;
                    let rest = ctx.inputs.len() - at;
                    if rest % width != 0 {
                        return Err($crate::run::error::NodeError::internal(format!(
                            "{rest} inputs after the named ones, not in groups of {width}"
                        )));
                    }
                    let $tail = (0..rest / width)
                        .map(|n| {
                            let i = at + n * width;
                            <Each as $crate::nodes::adapter::Tail>::decode(
                                &format!("{}[{}]", stringify!($tail), n),
                                &ctx.inputs[i..i + width],
                                &ctx.input_keys[i..i + width],
                            )
                        })
                        .collect::<Result<Vec<_>, $crate::run::error::NodeError>>()?;
                    at = ctx.inputs.len();
                )?
                if at != ctx.inputs.len() {
                    return Err($crate::run::error::NodeError::internal(format!("{} inputs, {} declared", ctx.inputs.len(), at)));
                }
                Ok($name { $($field,)* $($opt,)? $($tail)? })
            }
        }
    };
}
pub(crate) use inputs;

inputs! {
    /// The inputs of a kind that has none (a source: triage, env).
    pub(crate) struct NoInputs / NoNames {}
}

pub(crate) use crate::run::Made;

/// A node kind. The implementing value holds the params plus what the job
/// needs that is not part of the key (directories, clients).
pub(crate) trait Kind: Send + Sync + Sized + 'static {
    /// The kind's word: `NodeKind::X.as_str()` for every kind of the
    /// product (the test kinds below are not assay's).
    const NAME: &'static str;
    /// Bumped whenever the same params and inputs would make another record.
    const VERSION: u32;
    /// Test runs: reused until re-read, never re-executed to check them.
    const OBSERVATION: bool = false;
    type Params: Serialize;
    type Inputs: Inputs;
    type Record: Serialize;

    fn params(&self) -> &Self::Params;

    fn run(
        self: Arc<Self>,
        inputs: Self::Inputs,
        ctx: JobCtx,
    ) -> impl Future<Output = Result<Made<Self::Record>, NodeError>> + Send;

    /// See [`Job::exclusive`].
    fn exclusive(&self) -> Option<&str> {
        None
    }

    /// See [`Job::refuse_hit`].
    fn refuse_hit(&self, _record: &[u8]) -> Option<String> {
        None
    }
}

struct Adapter<K>(Arc<K>);

impl<K: Kind> Job for Adapter<K> {
    fn run(&self, ctx: JobCtx) -> JobFuture {
        let kind = self.0.clone();
        Box::pin(async move {
            let err = |e: NodeError| e.context(K::NAME).into_job();
            let inputs = K::Inputs::decode(&ctx).map_err(err)?;
            let made = kind.run(inputs, ctx).await.map_err(err)?;
            Ok(Output {
                bytes: serde_json::to_vec(&made.record).map_err(|e| err(NodeError::internal(e)))?,
                attachments: made.attachments,
            })
        })
    }

    fn exclusive(&self) -> Option<&str> {
        self.0.exclusive()
    }

    fn refuse_hit(&self, output: &[u8]) -> Option<String> {
        self.0.refuse_hit(output)
    }
}

/// The node `name` of kind `K`, its inputs named.
pub(crate) fn spec<K: Kind>(
    name: String,
    kind: K,
    inputs: <K::Inputs as Inputs>::Names,
) -> NodeSpec {
    NodeSpec {
        name,
        kind: K::NAME.to_owned(),
        kind_version: K::VERSION,
        params: encode_params(kind.params()),
        params_json: serde_json::to_string(kind.params()).unwrap_or_default(),
        deps: K::Inputs::names(inputs),
        observation: K::OBSERVATION,
        job: Arc::new(Adapter(Arc::new(kind))),
    }
}

#[cfg(test)]
mod tests {
    //! A whole node kind, as a new one is written: the file's part is the
    //! params, inputs, record and `impl Kind` below; the registration is the
    //! one `spec` call per node (in the product, in the layout).
    use std::sync::Arc;

    use assay_engine::{BuildOptions, Graph, JobCtx, NodeSpec, NodeStatus, Store};
    use serde::{Deserialize, Serialize};

    use super::{Kind, Made, NoInputs, NoNames, spec};

    // ---- the kind's file --------------------------------------------------
    #[derive(Serialize)]
    struct CountParams {
        word: String,
    }

    #[derive(Serialize, Deserialize)]
    struct CountRecord {
        count: usize,
    }

    super::inputs! {
        struct CountInputs / CountNames { left: CountRecord, right: CountRecord }
    }

    /// Adds its inputs' counts, plus one per letter of its word.
    struct Count(CountParams);

    impl Kind for Count {
        const NAME: &'static str = "count";
        const VERSION: u32 = 1;
        type Params = CountParams;
        type Inputs = CountInputs;
        type Record = CountRecord;

        fn params(&self) -> &CountParams {
            &self.0
        }

        async fn run(
            self: Arc<Self>,
            i: CountInputs,
            _ctx: JobCtx,
        ) -> Result<Made<CountRecord>, crate::run::error::NodeError> {
            Ok(Made::record(CountRecord {
                count: i.left.count + i.right.count + self.0.word.len(),
            }))
        }
    }
    // ---- end of the kind's file -------------------------------------------

    /// A source node without inputs, to feed the counts.
    struct Seed(CountParams);

    impl Kind for Seed {
        const NAME: &'static str = "seed";
        const VERSION: u32 = 1;
        type Params = CountParams;
        type Inputs = NoInputs;
        type Record = CountRecord;

        fn params(&self) -> &CountParams {
            &self.0
        }

        async fn run(
            self: Arc<Self>,
            _: NoInputs,
            _ctx: JobCtx,
        ) -> Result<Made<CountRecord>, crate::run::error::NodeError> {
            Ok(Made::record(CountRecord {
                count: self.0.word.len(),
            }))
        }
    }

    fn word(w: &str) -> CountParams {
        CountParams { word: w.into() }
    }

    /// Builds `nodes` in a fresh store: each node's status and record.
    fn build(nodes: Vec<NodeSpec>) -> Vec<(String, NodeStatus, Option<Vec<u8>>)> {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
        let graph = Graph::new(nodes).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let opts = BuildOptions {
            jobs: 2,
            reread: Default::default(),
            label: "test".into(),
        };
        let outcome = rt
            .block_on(assay_engine::build(&store, &graph, &opts, &mut |_| {}))
            .unwrap();
        names
            .into_iter()
            .enumerate()
            .map(|(id, name)| {
                let bytes = outcome.output(&store, id).unwrap().map(|b| b.to_vec());
                (name, outcome.nodes[id].status.clone(), bytes)
            })
            .collect()
    }

    #[test]
    fn a_new_kind_runs_through_the_engine_with_its_inputs_by_name() {
        let nodes = vec![
            spec("seed:a".into(), Seed(word("ab")), NoNames {}),
            spec("seed:b".into(), Seed(word("abc")), NoNames {}),
            spec(
                "count:ab".into(),
                Count(word("x")),
                CountNames {
                    left: "seed:a".into(),
                    right: "seed:b".into(),
                },
            ),
        ];
        assert_eq!(
            nodes[2].deps,
            ["seed:a", "seed:b"],
            "the names' order is the fields'"
        );
        assert_eq!(
            (nodes[2].kind.as_str(), nodes[2].kind_version),
            ("count", 1)
        );
        let built = build(nodes);
        let (name, status, bytes) = &built[2];
        assert_eq!((name.as_str(), status), ("count:ab", &NodeStatus::Executed));
        let record: CountRecord = serde_json::from_slice(bytes.as_ref().unwrap()).unwrap();
        assert_eq!(record.count, 2 + 3 + 1);
    }

    /// Sums any number of counts after a first one it subtracts.
    struct Sum(CountParams);

    super::inputs! {
        struct SumInputs / SumNames { first: CountRecord; ..rest: [CountRecord] }
    }

    impl Kind for Sum {
        const NAME: &'static str = "sum";
        const VERSION: u32 = 1;
        type Params = CountParams;
        type Inputs = SumInputs;
        type Record = CountRecord;

        fn params(&self) -> &CountParams {
            &self.0
        }

        async fn run(
            self: Arc<Self>,
            i: SumInputs,
            ctx: JobCtx,
        ) -> Result<Made<CountRecord>, crate::run::error::NodeError> {
            // Every input comes with its node's key, as the engine has it.
            assert!(i.rest.iter().all(|d| ctx.input_keys.contains(&d.key)));
            assert_eq!(ctx.input_keys[0], i.first.key);
            let rest: usize = i.rest.iter().map(|d| d.count).sum();
            Ok(Made::record(CountRecord {
                count: rest - i.first.count,
            }))
        }
    }

    #[test]
    fn a_tail_of_inputs_follows_the_named_ones() {
        let nodes = vec![
            spec("seed:a".into(), Seed(word("a")), NoNames {}),
            spec("seed:bb".into(), Seed(word("bb")), NoNames {}),
            spec("seed:ccc".into(), Seed(word("ccc")), NoNames {}),
            spec(
                "sum".into(),
                Sum(word("")),
                SumNames {
                    first: "seed:a".into(),
                    rest: vec!["seed:bb".into(), "seed:ccc".into()],
                },
            ),
        ];
        assert_eq!(nodes[3].deps, ["seed:a", "seed:bb", "seed:ccc"]);
        let built = build(nodes);
        assert_eq!(built[3].1, NodeStatus::Executed, "{:?}", built[3]);
        let record: CountRecord = serde_json::from_slice(built[3].2.as_ref().unwrap()).unwrap();
        assert_eq!(record.count, 2 + 3 - 1);
    }

    /// The first count plus, per pair after it, the left count times the right.
    struct Products(CountParams);

    super::inputs! {
        struct ProductsInputs / ProductsNames { first: CountRecord; ..pairs: [CountRecord, CountRecord] }
    }

    impl Kind for Products {
        const NAME: &'static str = "products";
        const VERSION: u32 = 1;
        type Params = CountParams;
        type Inputs = ProductsInputs;
        type Record = CountRecord;

        fn params(&self) -> &CountParams {
            &self.0
        }

        async fn run(
            self: Arc<Self>,
            i: ProductsInputs,
            ctx: JobCtx,
        ) -> Result<Made<CountRecord>, crate::run::error::NodeError> {
            // Each of a pair comes with its own node's key, in input order.
            let keys: Vec<_> = i.pairs.iter().flat_map(|(l, r)| [l.key, r.key]).collect();
            assert_eq!(keys, ctx.input_keys[1..]);
            Ok(Made::record(CountRecord {
                count: i.first.count
                    + i.pairs
                        .iter()
                        .map(|(l, r)| l.count * r.count)
                        .sum::<usize>(),
            }))
        }
    }

    #[test]
    fn a_tail_of_pairs_keeps_each_pair_together_in_input_order() {
        let seeds = ["a", "bb", "ccc", "dddd", "eeeee"]
            .map(|w| spec(format!("seed:{w}"), Seed(word(w)), NoNames {}));
        let pair = |l: &str, r: &str| (format!("seed:{l}"), format!("seed:{r}"));
        let products = |name: &str, pairs| {
            spec(
                name.into(),
                Products(word("")),
                ProductsNames {
                    first: "seed:a".into(),
                    pairs,
                },
            )
        };
        let mut nodes = Vec::from(seeds);
        nodes.push(products(
            "products",
            vec![pair("bb", "ccc"), pair("dddd", "eeeee")],
        ));
        assert_eq!(
            nodes[5].deps,
            ["seed:a", "seed:bb", "seed:ccc", "seed:dddd", "seed:eeeee"],
            "each pair's two names, pair after pair"
        );
        // A hand-laid node whose tail is not whole pairs fails, saying so.
        let mut odd = products("odd", vec![pair("bb", "ccc")]);
        odd.deps.push("seed:dddd".into());
        nodes.push(odd);
        let built = build(nodes);
        assert_eq!(built[5].1, NodeStatus::Executed, "{:?}", built[5]);
        let record: CountRecord = serde_json::from_slice(built[5].2.as_ref().unwrap()).unwrap();
        assert_eq!(record.count, 1 + 2 * 3 + 4 * 5);
        match &built[6].1 {
            NodeStatus::Failed(why) => assert!(why.contains("not in groups of 2"), "{why}"),
            other => panic!("odd should fail, it is {other:?}"),
        }
    }

    /// A first count, plus an extra one where the layout gives it.
    struct Maybe(CountParams);

    super::inputs! {
        struct MaybeInputs / MaybeNames { first: CountRecord; ?extra: CountRecord }
    }

    impl Kind for Maybe {
        const NAME: &'static str = "maybe";
        const VERSION: u32 = 1;
        type Params = CountParams;
        type Inputs = MaybeInputs;
        type Record = CountRecord;

        fn params(&self) -> &CountParams {
            &self.0
        }

        async fn run(
            self: Arc<Self>,
            i: MaybeInputs,
            _ctx: JobCtx,
        ) -> Result<Made<CountRecord>, crate::run::error::NodeError> {
            let extra = i.extra.map_or(100, |d| d.count);
            Ok(Made::record(CountRecord {
                count: i.first.count + extra,
            }))
        }
    }

    #[test]
    fn an_optional_input_is_there_when_the_layout_names_it() {
        let maybe = |name: &str, extra: Option<&str>| {
            spec(
                name.into(),
                Maybe(word("")),
                MaybeNames {
                    first: "seed:a".into(),
                    extra: extra.map(Into::into),
                },
            )
        };
        let nodes = vec![
            spec("seed:a".into(), Seed(word("a")), NoNames {}),
            spec("seed:bb".into(), Seed(word("bb")), NoNames {}),
            maybe("maybe:with", Some("seed:bb")),
            maybe("maybe:without", None),
        ];
        assert_eq!(nodes[2].deps, ["seed:a", "seed:bb"]);
        assert_eq!(nodes[3].deps, ["seed:a"]);
        let built = build(nodes);
        let count = |i: usize| {
            assert_eq!(built[i].1, NodeStatus::Executed, "{:?}", built[i]);
            serde_json::from_slice::<CountRecord>(built[i].2.as_ref().unwrap())
                .unwrap()
                .count
        };
        assert_eq!(count(2), 1 + 2, "with its extra input");
        assert_eq!(count(3), 1 + 100, "without: None");
    }

    #[test]
    fn an_input_that_does_not_decode_fails_the_node_naming_the_kind_and_input() {
        /// Records another shape than `CountRecord`.
        struct Other(CountParams);
        #[derive(Serialize)]
        struct OtherRecord {
            text: String,
        }
        impl Kind for Other {
            const NAME: &'static str = "other";
            const VERSION: u32 = 1;
            type Params = CountParams;
            type Inputs = NoInputs;
            type Record = OtherRecord;
            fn params(&self) -> &CountParams {
                &self.0
            }
            async fn run(
                self: Arc<Self>,
                _: NoInputs,
                _ctx: JobCtx,
            ) -> Result<Made<OtherRecord>, crate::run::error::NodeError> {
                Ok(Made::record(OtherRecord { text: "t".into() }))
            }
        }
        let nodes = vec![
            spec("other:a".into(), Other(word("a")), NoNames {}),
            spec("seed:b".into(), Seed(word("b")), NoNames {}),
            spec(
                "count:x".into(),
                Count(word("x")),
                CountNames {
                    left: "other:a".into(),
                    right: "seed:b".into(),
                },
            ),
        ];
        let built = build(nodes);
        match &built[2].1 {
            NodeStatus::Failed(why) => assert!(
                why.contains("count: input `left`"),
                "the error names the kind and the input: {why}"
            ),
            other => panic!("count:x should fail, it is {other:?}"),
        }
        assert_eq!(
            built[1].1,
            NodeStatus::Executed,
            "the rest of the build goes on"
        );
    }
}
