import ContinualHDF5

/// Version and names of the results-file layout (documented in docs/results-format.md).
public enum ResultsSchema {
    /// Bumped whenever a reader would need to change.
    public static let version: Int64 = 1
    /// The toolkit's semantic version (docs/versioning.md): released as git tag `v<toolkitVersion>`;
    /// written to every results file's root attribute `toolkit_version`, next to `git_commit`.
    public static let toolkitVersion = "0.1.0"

    /// Columns of `/summary`, in order.
    public static let summaryColumns: [(name: String, kind: SummaryKind)] = [
        ("run_id", .string), ("sweep_index", .int), ("name", .string), ("variant", .string),
        ("strategy", .string), ("scenario", .string),
        ("seed", .int), ("status", .string), ("message", .string),
        ("acc", .double), ("bwt", .double), ("fwt", .double), ("forgetting", .double),
        ("learning_accuracy", .double), ("forgetting_last", .double), ("forgetting_max_all_rows", .double),
        ("bwt_all_pairs", .double), ("fwt_init", .double),
        ("total_parameters", .int), ("trainable_parameters", .int), ("model_bytes", .int), ("buffer_bytes", .int),
        ("flops_per_prediction", .int), ("train_seconds", .double), ("eval_seconds", .double),
    ] + deviceSummaryColumns + protocolSummaryColumns + measureSummaryColumns + comparisonSummaryColumns

    /// Columns added to `/summary` since `version` 1, with the value a row written before them
    /// reads as (`SummaryUpgrade`): NaN, or −1 for an integer ("not recorded").
    public static let addedColumns: [String: HDF5Value] = [
        "steps_per_experience": .double(.nan), "training_flops": .int(-1), "min_acc": .double(.nan), "wc_acc": .double(.nan),
    ]

    /// Comparison columns (issue 24): the mean optimizer steps per experience and the run's total
    /// training FLOPs (`TrainingBudget`), so no table compares runs of different compute unawares;
    /// min-ACC and WC-ACC of continual evaluation (`ContinualEvaluationCurve`; NaN when
    /// `metrics.continual_eval_every` is not set).
    public static let comparisonSummaryColumns: [(name: String, kind: SummaryKind)] = [
        ("steps_per_experience", .double), ("training_flops", .int), ("min_acc", .double), ("wc_acc", .double),
    ]

    /// ACC (mean of the final row) of each measure beyond accuracy (see `MetricsConfig`).
    public static let measureSummaryColumns: [(name: String, kind: SummaryKind)] = [
        ("balanced_acc", .double), ("macro_f1", .double), ("auroc", .double), ("auprc", .double),
    ]

    /// Protocol columns: whether the run used task identity at test time (1/0), and which outputs
    /// the softmax covered ("all" or "seen").
    public static let protocolSummaryColumns: [(name: String, kind: SummaryKind)] = [
        ("uses_task_labels", .int), ("active_outputs", .string),
    ]

    /// Device columns (docs/on-device.md): training energy (J) under the run's device profile,
    /// sessions, peak training memory (B), int8 model bytes (0 = not quantised), prequential and
    /// final accuracy of scheduled runs (NaN otherwise), mean int8 accuracy, latency (s).
    public static let deviceSummaryColumns: [(name: String, kind: SummaryKind)] = [
        ("energy_j", .double), ("training_sessions", .int), ("peak_memory_bytes", .int), ("model_bytes_int8", .int),
        ("prequential_acc", .double), ("final_acc", .double), ("acc_int8", .double), ("prediction_latency_s", .double),
        ("device_profile", .string), ("schedule", .string),
    ]

    /// Summary columns holding wall times: the only values that differ between two runs of the
    /// same config (compare everything else).
    public static let timingColumns: Set<String> = ["train_seconds", "eval_seconds"]

    public enum SummaryKind: Sendable { case string, int, double }
}
