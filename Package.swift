// swift-tools-version:6.1
import PackageDescription

// Layers (dependencies point down only; see docs/architecture.md, whose table a test checks against this file):
// continual (CLI) → ContinualExperiments → ContinualStrategies / ContinualScenarios / ContinualMetrics
// → ContinualCore. ContinualHDF5 wraps the C library and knows nothing of continual learning.
let package = Package(
    name: "ContinualKit",
    // The portable targets (Core, Strategies, Scenarios, Metrics) use the standard library only;
    // the oldest Apple releases they build on are set by `ContinuousClock` / `Duration` (Swift 5.7
    // concurrency clocks), used by the training loop's wall-time measurements.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .executable(name: "continual", targets: ["continual"]),
        .library(name: "ContinualCore", targets: ["ContinualCore"]),
        .library(name: "ContinualStrategies", targets: ["ContinualStrategies"]),
        .library(name: "ContinualScenarios", targets: ["ContinualScenarios"]),
        .library(name: "ContinualMetrics", targets: ["ContinualMetrics"]),
        .library(name: "ContinualFederated", targets: ["ContinualFederated"]),
        .library(name: "ContinualHDF5", targets: ["ContinualHDF5"]),
        .library(name: "ContinualExperiments", targets: ["ContinualExperiments"]),
        .library(name: "ContinualExport", targets: ["ContinualExport"]),
        // The on-device runtime an app links: `PersonalModel` on the portable targets only.
        .library(name: "ContinualOnDevice", targets: ["ContinualOnDevice"]),
        // The habit pipeline's event log and feature extractor, shared by the app and the research side.
        .library(name: "ContinualHabitEvents", targets: ["ContinualHabitEvents"]),
        .executable(name: "HabitApp", targets: ["HabitApp"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // Documentation only: adds `swift package generate-documentation` (DocC). A plugin, so
        // nothing of it is linked into the libraries or the CLI.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CHDF5",
            pkgConfig: "hdf5",
            providers: [.apt(["libhdf5-dev"]), .brew(["hdf5"])]
        ),
        .target(name: "ContinualHDF5", dependencies: ["CHDF5"]),
        // Dense-layer kernels in C (clang vector extensions): a generic path for every CPU and an
        // AVX2+FMA clone chosen at run time on x86-64 (Swift compiles for baseline x86-64, and a
        // package cannot impose -target-cpu on its users). See docs/benchmarks.md.
        .target(name: "CContinualKernels"),
        .target(name: "ContinualCore", dependencies: ["CContinualKernels"]),
        .target(name: "ContinualMetrics", dependencies: ["ContinualCore"]),
        // Scenarios read drift detectors (ContinualMetrics) for the on_drift schedule.
        .target(name: "ContinualScenarios", dependencies: ["ContinualCore", "ContinualMetrics"]),
        .target(name: "ContinualStrategies", dependencies: ["ContinualCore"]),
        // Federated pieces (aggregation rules, DP clipping and noise, the privacy accountant):
        // portable like Core, so the client side can ship in an app.
        .target(name: "ContinualFederated", dependencies: ["ContinualCore"]),
        // Export to ONNX and Core ML (file formats, an outer layer like ContinualHDF5): writes the
        // protobuf wire format itself, so it needs nothing but Core. Not linked into the portable
        // targets.
        .target(name: "ContinualExport", dependencies: ["ContinualCore"]),
        // The on-device runtime (`PersonalModel`): portable targets only, no Foundation, no HDF5.
        .target(
            name: "ContinualOnDevice",
            dependencies: ["ContinualCore", "ContinualStrategies", "ContinualScenarios", "ContinualMetrics"]
        ),
        // The habit pipeline's raw events, their CSV form and the feature extractor (streak,
        // completion rates, ...): portable, so the app and the research side share one extractor.
        .target(name: "ContinualHabitEvents", dependencies: ["ContinualCore"]),
        // SQLite (the system library), for the example app's event store only: never a dependency
        // of the portable targets or of the research side.
        .systemLibrary(
            name: "CSQLite",
            path: "Examples/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // The habit-tracking app's loop as a runnable example (`swift run HabitApp`): its logic is
        // a library (so tests drive it) over the runtime and its SQLite event store; the
        // executable parses options.
        .target(name: "HabitAppKit", dependencies: ["ContinualOnDevice", "ContinualHabitEvents", "CSQLite"],
                path: "Examples/HabitAppKit"),
        .executableTarget(name: "HabitApp", dependencies: ["HabitAppKit"], path: "Examples/HabitApp"),
        .target(
            name: "ContinualExperiments",
            dependencies: [
                "ContinualCore", "ContinualMetrics", "ContinualScenarios",
                "ContinualStrategies", "ContinualFederated", "ContinualHDF5", "ContinualExport", "ContinualHabitEvents",
            ]
        ),
        .executableTarget(
            name: "continual",
            // Every target the CLI imports, declared (not reached through ContinualExperiments).
            dependencies: [
                "ContinualExperiments", "ContinualCore", "ContinualFederated", "ContinualExport", "ContinualMetrics",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // The git commit of the checkout it is built from, recorded in every results file.
            plugins: ["BuildStamp"]
        ),
        // Build-time stamp of the CLI (Plugins/BuildStamp): runs git on the toolkit's checkout.
        .plugin(name: "BuildStamp", capability: .buildTool()),
        .testTarget(name: "ContinualHDF5Tests", dependencies: ["ContinualHDF5"]),
        .testTarget(name: "ContinualCoreTests", dependencies: ["ContinualCore"]),
        .testTarget(name: "ContinualMetricsTests", dependencies: ["ContinualMetrics"]),
        .testTarget(name: "ContinualScenariosTests", dependencies: ["ContinualScenarios"]),
        .testTarget(name: "ContinualStrategiesTests", dependencies: ["ContinualStrategies", "ContinualScenarios"]),
        .testTarget(name: "ContinualFederatedTests", dependencies: ["ContinualFederated"]),
        .testTarget(name: "ContinualExperimentsTests", dependencies: ["ContinualExperiments", "ContinualExport"]),
        .testTarget(name: "ContinualExportTests", dependencies: ["ContinualExport", "ContinualCore"]),
        .testTarget(
            name: "ContinualOnDeviceTests",
            dependencies: ["ContinualOnDevice", "ContinualExperiments", "HabitAppKit", "ContinualHabitEvents"]
        ),
    ]
)
