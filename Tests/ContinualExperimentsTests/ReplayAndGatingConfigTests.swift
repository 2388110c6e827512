import ContinualCore
import ContinualExperiments
import ContinualStrategies
import Foundation
import Testing

/// RWalk, MIR, XdG, ER-AML, GSS, BiC, X-DER and SCR from experiment JSON (issue 46): bad options name their
/// key path, composed lists run (XdG with SI, RWalk beside MIR, GSS with EWC), sole-rehearsal,
/// head and gating limits are refused, and the protocol choices (task labels at test, BiC's
/// stages, X-DER's logit updates, SCR's classifier) are recorded.
@Suite("Replay and gating config")
struct ReplayAndGatingConfigTests {
    static func experiment(_ strategy: String, scenario: String? = nil) -> Data {
        Data("""
        {"name": "issue46", "seed": 2, "allow_task_labels": true,
         "scenario": \(scenario ?? #"{"type": "habit_drift", "train_per_experience": 96, "test_per_experience": 32, "phases": ["morning", "night", "weekend_only"]}"#),
         "model": {"hidden": [8]}, "optimizer": {"type": "sgd", "lr": 0.05},
         "training": {"epochs": 2, "batch_size": 16},
         "strategy": \(strategy)}
        """.utf8)
    }

    static func error(_ strategy: String) -> String? {
        do {
            _ = try ExperimentFile.parse(data: experiment(strategy))
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test(arguments: [
        (#"[{"type": "rwalk", "alpha": 0}]"#, ".strategy[0].alpha", "(0, 1]"),
        (#"["naive", {"type": "rwalk", "score_interval": 0}]"#, ".strategy[1].score_interval", "1...1000000"),
        (#"[{"type": "rwalk", "lambda": -1}]"#, ".strategy[0].lambda", "≥ 0"),
        (#"[{"type": "rwalk", "eps": 1}]"#, ".strategy[0].eps", "unknown key"),
        (#"[{"type": "mir", "replay_per_batch": 60}]"#, ".strategy[0].replay_per_batch", "1...candidates (50)"),
        (#"[{"type": "mir", "virtual_lr": 0}]"#, ".strategy[0].virtual_lr", "> 0"),
        (#"[{"type": "xdg", "gated_fraction": 1}]"#, ".strategy[0].gated_fraction", "[0, 1)"),
        (#"[{"type": "er_aml", "temperature": 0}]"#, ".strategy[0].temperature", "> 0"),
        (#"[{"type": "er_aml", "capacity": 0}]"#, ".strategy[0].capacity", "1...10000000"),
        (#"[{"type": "gss", "memory_gradients": 0}]"#, ".strategy[0].memory_gradients", "1...10000"),
        (#"[{"type": "gss", "gate": "row"}]"#, ".strategy[0].gate", "batch"),
        (#"["naive", {"type": "gss", "capacity": 0}]"#, ".strategy[1].capacity", "1...10000000"),
        (#"[{"type": "gss", "candidates": 5}]"#, ".strategy[0].candidates", "unknown key"),
        (#"[{"type": "bic", "validation_fraction": 1}]"#, ".strategy[0].validation_fraction", "(0, 1)"),
        (#"[{"type": "bic", "lambda": 1.5}]"#, ".strategy[0].lambda", "0...1"),
        (#"[{"type": "bic", "temperature": 0}]"#, ".strategy[0].temperature", "> 0"),
        (#"[{"type": "bic", "beta_decay": -1}]"#, ".strategy[0].beta_decay", "≥ 0"),
        (#"[{"type": "xder", "gamma": 0}]"#, ".strategy[0].gamma", "(0, 1]"),
        (#"[{"type": "xder", "gamma": 1.5}]"#, ".strategy[0].gamma", "(0, 1]"),
        (#"["naive", {"type": "xder", "capacity": -1}]"#, ".strategy[1].capacity", "0...10000000"),
        (#"[{"type": "xder", "replay_per_batch": -2}]"#, ".strategy[0].replay_per_batch", "0...100000"),
        (#"[{"type": "xder", "alpha": -1}]"#, ".strategy[0].alpha", "≥ 0"),
        (#"[{"type": "xder", "simclr_temp": 5}]"#, ".strategy[0].simclr_temp", "unknown key"),
        (#"[{"type": "scr", "temperature": 0}]"#, ".strategy[0].temperature", "[0.001, 100]"),
        (#"[{"type": "scr", "projection": "deep"}]"#, ".strategy[0].projection", "allowed values: mlp, linear, none"),
        (#"[{"type": "scr", "projection_dim": 1}]"#, ".strategy[0].projection_dim", "2...65536"),
        (#"["naive", {"type": "scr", "capacity": 0}]"#, ".strategy[1].capacity", "1...10000000"),
        (#"[{"type": "scr", "replay_per_batch": -1}]"#, ".strategy[0].replay_per_batch", "0...100000"),
        (#"[{"type": "scr", "noise_std": -0.1}]"#, ".strategy[0].noise_std", "≥ 0"),
        (#"[{"type": "scr", "feature_drop": 1}]"#, ".strategy[0].feature_drop", "[0, 1)"),
        (#"[{"type": "scr", "shift": -1}]"#, ".strategy[0].shift", "0...65536"),
        (#"[{"type": "scr", "scale": 1}]"#, ".strategy[0].scale", "[0, 1)"),
        (#"[{"type": "scr", "base_temperature": 0.07}]"#, ".strategy[0].base_temperature", "unknown key"),
        (#"[{"type": "bir", "internal_replay": true, "reconstruction": "bernoulli"}]"#, ".strategy[0].reconstruction", "must be \"gaussian\" with internal_replay"),
        (#"[{"type": "bir", "feedback": false}]"#, ".strategy[0].feedback", "only true is implemented"),
        (#"[{"type": "bir", "gate_proportion": 1}]"#, ".strategy[0].gate_proportion", "[0, 1)"),
        (#"[{"type": "bir", "temperature": 0}]"#, ".strategy[0].temperature", "[0.01, 100]"),
        (#"[{"type": "bir", "latent": 0}]"#, ".strategy[0].latent", "1...4096"),
        (#"[{"type": "bir", "weighting": "half"}]"#, ".strategy[0].weighting", "inverse_task, equal"),
        (#"[{"type": "bir", "reconstruction": "mse"}]"#, ".strategy[0].reconstruction", "bernoulli, gaussian"),
        (#"[{"type": "bir", "z_dim": 100}]"#, ".strategy[0].z_dim", "unknown key"),
    ])
    func invalidOptionsNameTheirKeyPath(strategy: String, path: String, fragment: String) {
        let e = Self.error(strategy)
        #expect(e?.contains(path) == true && e?.contains(fragment) == true, "\(String(describing: e))")
    }

    @Test(arguments: [
        (#"[{"type": "er_aml"}, {"type": "mir"}]"#, "cannot be combined with another method that stores samples (mir)"),
        (#"[{"type": "er_aml"}, {"type": "er_ace"}]"#, "cannot be combined with another method that stores samples"),
        (#"[{"type": "bic"}, {"type": "gss"}]"#, "cannot be combined with another method that stores samples (gss)"),
        (#"[{"type": "replay"}, {"type": "bic"}]"#, "cannot be combined with another method that stores samples"),
        (#"[{"type": "scr"}, {"type": "replay"}]"#, "cannot be combined with another method that stores samples (replay)"),
        (#"[{"type": "bir"}, {"type": "ewc"}]"#, "\"bir\" is a whole method"),
    ])
    func refusedLists(_ strategy: String, _ reason: String) {
        let e = Self.error(strategy)
        #expect(e?.contains(reason) == true, "\(String(describing: e))")
    }

    /// XdG with SI and RWalk beside MIR run end to end; XdG records its protocol.
    @Test(arguments: [#"[{"type": "xdg", "gated_fraction": 0.5}, {"type": "si", "c": 0.5}]"#,
                      #"[{"type": "mir", "capacity": 50, "candidates": 20, "replay_per_batch": 5}, {"type": "rwalk", "lambda": 1}]"#,
                      #"[{"type": "er_aml", "capacity": 50}, {"type": "ewc"}]"#,
                      #"[{"type": "gss", "capacity": 30, "memory_gradients": 5, "memory_subset": 3, "replay_per_batch": 8}, {"type": "ewc"}]"#])
    func composedListsRun(_ strategy: String) throws {
        let file = try ExperimentFile.parse(data: Self.experiment(strategy))
        let result = RunExecutor.execute(file.runs[0])
        #expect(result.status == .completed, "\(result.message)")
        let outcome = try #require(result.outcome)
        #expect(outcome.accuracy.joined().allSatisfy { $0.isFinite })
        if let xdg = outcome.pluginReports.first(where: { $0.name == "xdg" }) {
            #expect(xdg.report.attributes["protocol"] == .string("task-incremental: each experience is tested through its own gates (task label at test time)"))
        }
    }

    /// Two gating plugins are refused (the loop gates through one), naming both.
    @Test func xdgBesideHatIsRefused() throws {
        let file = try ExperimentFile.parse(data: Self.experiment(#"[{"type": "xdg"}, {"type": "hat"}]"#))
        let result = RunExecutor.execute(file.runs[0])
        #expect(result.status != .completed)
    }

    /// BiC needs one multi-class head: refused when the file is read, or when the run prepares.
    @Test func bicRefusesABinaryHead() throws {
        if let e = Self.error(#"[{"type": "bic"}]"#) {
            #expect(e.contains("multi-class head"), "\(e)")
        } else {
            let bic = RunExecutor.execute(try ExperimentFile.parse(data: Self.experiment(#"[{"type": "bic"}]"#)).runs[0])
            #expect(bic.status != .completed && bic.message.contains("multi-class head"), "\(bic.message)")
        }
    }

    /// BiC on class-incremental split digits: no stage 2 after the first experience; from the
    /// second on λ = n_old / (n_old + 2) and stage 2 uses validation samples.
    @Test func bicRecordsItsStagesOnClassIncrementalDigits() throws {
        let file = try ExperimentFile.parse(data: Self.experiment(#"[{"type": "bic", "capacity": 100}]"#,
                                                                   scenario: #"{"type": "split_digits", "setting": "class"}"#))
        let result = RunExecutor.execute(file.runs[0])
        #expect(result.status == .completed, "\(result.message)")
        let report = try #require(result.outcome?.pluginReports.first { $0.name == "bic" }?.report)
        let stages = try #require(report.arrays["stages"])
        #expect(stages.shape == [5, 4])
        #expect(Array(stages.values[0..<4]) == [1, 0, 0, 0])
        for t in 1..<5 {
            #expect(stages.values[4 * t + 2] == Double(2 * t) / Double(2 * t + 2))
            #expect(stages.values[4 * t + 3] > 0)
        }
    }

    /// X-DER needs one multi-class head: refused when the file is read, or when the run prepares.
    @Test func xderRefusesABinaryHead() throws {
        if let e = Self.error(#"[{"type": "xder"}]"#) {
            #expect(e.contains("multi-class head"), "\(e)")
        } else {
            let xder = RunExecutor.execute(try ExperimentFile.parse(data: Self.experiment(#"[{"type": "xder"}]"#)).runs[0])
            #expect(xder.status != .completed && xder.message.contains("xder") && xder.message.contains("multi-class head"),
                    "\(xder.message)")
        }
    }

    /// X-DER on class-incremental split digits: the buffer is filled at each experience's end
    /// (100 entries, class-balanced); from the second experience on the future update rewrites
    /// every earlier entry the cut to ⌊100 / classes seen⌋ per class keeps, and the report records the protocol and what it leaves out.
    @Test func xderRecordsItsUpdatesOnClassIncrementalDigits() throws {
        let file = try ExperimentFile.parse(data: Self.experiment(#"[{"type": "xder", "capacity": 100, "replay_per_batch": 8}]"#,
                                                                   scenario: #"{"type": "split_digits", "setting": "class"}"#))
        let result = RunExecutor.execute(file.runs[0])
        #expect(result.status == .completed, "\(result.message)")
        let report = try #require(result.outcome?.pluginReports.first { $0.name == "xder" }?.report)
        let updates = try #require(report.arrays["updates"])
        #expect(updates.shape == [5, 4])
        #expect(updates.values[0] == 0 && updates.values[1] == 100)
        for t in 1..<5 {
            let kept = Double(100 / (2 * t + 2) * 2 * t)   // the earlier classes' shares after the cut
            #expect(updates.values[4 * t] == kept && updates.values[4 * t + 1] == 100 - kept)
        }
        #expect(report.attributes["buffer_samples"] == .int(100))
        if case .string(let s) = report.attributes["not_reproduced"] { #expect(s.contains("SimCLR")) } else { Issue.record("no not_reproduced") }
    }

    /// SCR needs one multi-class head and a hidden layer: refused, naming scr and what is missing.
    @Test func scrRefusesABinaryHeadAndAModelWithoutHiddenLayers() {
        /// The refusal, when the file is read or when the run prepares.
        func refusal(_ data: Data) -> String {
            do {
                let result = RunExecutor.execute(try ExperimentFile.parse(data: data).runs[0])
                return result.status == .completed ? "completed" : result.message
            } catch {
                return "\(error)"
            }
        }
        let binary = refusal(Self.experiment(#"[{"type": "scr"}]"#))
        #expect(binary.contains("scr") && binary.contains("multi-class head"), "\(binary)")
        let text = String(decoding: Self.experiment(#"[{"type": "scr"}]"#, scenario: #"{"type": "split_digits", "setting": "class"}"#), as: UTF8.self)
            .replacingOccurrences(of: #""hidden": [8]"#, with: #""hidden": []"#)
        let flat = refusal(Data(text.utf8))
        #expect(flat.contains("scr") && flat.contains("hidden layer"), "\(flat)")
    }

    /// SCR on class-incremental split digits: the memory is full from the first experience on and
    /// holds every class seen (so none is left out of the nearest-mean classifier), only the first
    /// step finds it empty, and the report states the classifier and what is not reproduced.
    @Test func scrRecordsItsMemoryAndClassifierOnClassIncrementalDigits() throws {
        let file = try ExperimentFile.parse(data: Self.experiment(#"[{"type": "scr", "capacity": 100, "replay_per_batch": 20, "projection_dim": 16}]"#,
                                                                   scenario: #"{"type": "split_digits", "setting": "class"}"#))
        let result = RunExecutor.execute(file.runs[0])
        #expect(result.status == .completed, "\(result.message)")
        let outcome = try #require(result.outcome)
        #expect(outcome.accuracy.joined().allSatisfy { $0.isFinite })
        let report = try #require(outcome.pluginReports.first { $0.name == "scr" }?.report)
        let memory = try #require(report.arrays["memory"])
        #expect(memory.shape == [5, 4])
        for t in 0..<5 {
            #expect(Array(memory.values[(4 * t)..<(4 * t + 4)]) == [100, Double(2 * t + 2), 0, t == 0 ? 1 : 0], "experience \(t)")
        }
        if case .string(let s) = report.attributes["classifier"] { #expect(s.hasPrefix("ncm")) } else { Issue.record("no classifier") }
        if case .string(let s) = report.attributes["not_reproduced"] { #expect(s.contains("augmentations")) } else { Issue.record("no not_reproduced") }
    }

    /// BI-R needs one multi-class head, a hidden layer (its encoder is the classifier's hidden
    /// layers) and float32 training: each refused when the run prepares, naming what is missing.
    @Test func birRefusesWhatItCannotRun() {
        func refusal(_ strategy: String, scenario: String? = nil, replacing: (String, String)? = nil) -> String {
            var text = String(decoding: Self.experiment(strategy, scenario: scenario), as: UTF8.self)
            if let (a, b) = replacing { text = text.replacingOccurrences(of: a, with: b) }
            do {
                let result = RunExecutor.execute(try ExperimentFile.parse(data: Data(text.utf8)).runs[0])
                return result.status == .completed ? "completed" : result.message
            } catch {
                return "\(error)"
            }
        }
        let digits = #"{"type": "split_digits", "setting": "class"}"#
        let binary = refusal(#"[{"type": "bir"}]"#)
        #expect(binary.contains("bir") && binary.contains("multiclass head"), "\(binary)")
        let flat = refusal(#"[{"type": "bir"}]"#, scenario: digits, replacing: (#""hidden": [8]"#, #""hidden": []"#))
        #expect(flat.contains("bir") && flat.contains("model.hidden is empty"), "\(flat)")
        let mixed = refusal(#"[{"type": "bir"}]"#, scenario: digits, replacing: (#""batch_size": 16"#, #""batch_size": 16, "precision": "bfloat16""#))
        #expect(mixed.contains("bir") && mixed.contains("use float32 training"), "\(mixed)")
        let shallow = refusal(#"[{"type": "bir", "internal_replay": true}]"#, scenario: digits)
        #expect(shallow.contains("internal_replay needs at least two hidden layers"), "\(shallow)")
    }

    /// BI-R on class-incremental split digits: completes, records each component's choice and
    /// one VAE loss per experience.
    @Test func birRecordsItsComponentsOnClassIncrementalDigits() throws {
        let file = try ExperimentFile.parse(data: Self.experiment(#"[{"type": "bir", "latent": 8}]"#,
                                                                   scenario: #"{"type": "split_digits", "setting": "class"}"#))
        let result = RunExecutor.execute(file.runs[0])
        #expect(result.status == .completed, "\(result.message)")
        let outcome = try #require(result.outcome)
        #expect(outcome.accuracy.joined().allSatisfy { $0.isFinite })
        let report = try #require(outcome.pluginReports.first { $0.name == "bir" }?.report)
        #expect(report.arrays["vae_loss"]?.values.count == 5 && report.arrays["vae_loss"]!.values.allSatisfy { $0.isFinite })
        for key in ["feedback", "conditional", "gates", "internal_replay", "distillation"] {
            #expect(report.attributes[key] != nil, "\(key)")
        }
        if case .string(let s) = report.attributes["distillation"] { #expect(s.contains("T = 2.0")) } else { Issue.record("no distillation") }
    }
}
