import Foundation
import Testing
@testable import ContinualExperiments

/// Issue 15 item 4: every rejected value names its key path (or line and column), long values
/// are shortened, trailing commas are errors, and near-miss names get a suggestion.
@Suite struct ConfigMessageTests {
    func error(_ json: String) -> ConfigError? {
        do { _ = try ExperimentFile.parse(data: Data(json.utf8)); return nil } catch let e as ConfigError { return e } catch { return nil }
    }

    static let base = #""name": "x", "scenario": "habit_drift""#

    @Test("numbers out of range, negative or fractional name their key path")
    func numbers() {
        let cases: [(String, String, String)] = [
            (#""seed": -1"#, ".seed", "non-negative integer"),
            (#""optimizer": {"type": "adam", "beta1": 1e308}"#, ".optimizer.beta1", "out of range"),
            (#""optimizer": {"type": "adam", "lr": 1e-320}"#, ".optimizer.lr", "too small"),
            (#""optimizer": {"lr": 1e39}"#, ".optimizer.lr", "out of range"),
            (#""training": {"epochs": 99999999999999999999}"#, ".training.epochs", "integer in range"),
            (#""training": {"epochs": 2.5}"#, ".training.epochs", "expected an integer"),
            (#""seed": 18446744073709551616"#, ".seed", "integer in range"),
            (#""model": {"hidden": [8, -3]}"#, ".model.hidden[1]", "≥ 1"),
            (#""scenario": {"type": "habit_drift", "warmup_days": 2147483648}"#, ".scenario.warmup_days", "36500"),
        ]
        for (extra, location, words) in cases {
            let json = extra.hasPrefix(#""scenario""#) ? #"{"name": "x", \#(extra)}"# : #"{\#(Self.base), \#(extra)}"#
            let e = error(json)
            #expect(e?.location == location, "\(extra): \(String(describing: e))")
            #expect(e?.message.contains(words) == true, "\(extra): \(String(describing: e))")
        }
    }

    @Test("non-finite literals, numbers beyond a Double and trailing commas: key path, line and column")
    func syntax() {
        let nan = error("{\(Self.base),\n \"training\": {\"epochs\": NaN}}")
        #expect(nan?.location == ".training.epochs (line 2, column 25)", "\(String(describing: nan))")
        let huge = error(#"{\#(Self.base), "seed": 1e400}"#)
        #expect(huge?.location.hasPrefix(".seed (line 1") == true && huge?.message.contains("out of range") == true)
        let object = error("{\(Self.base),\n \"training\": {\"epochs\": 1,}\n}")
        #expect(object?.location == ".training (line 2, column 26)" && object?.message.contains("trailing comma") == true,
                "\(String(describing: object))")
        let array = error("{\(Self.base), \"strategy\": [\"naive\",\n]}")
        #expect(array?.location.hasPrefix(".strategy (line 1") == true && array?.message.contains("trailing comma") == true,
                "\(String(describing: array))")
        let top = error("{\(Self.base),}")
        #expect(top?.message.contains("trailing comma") == true)
        let missingComma = error("{\"name\": \"x\"\n \"scenario\": \"habit_drift\"}")
        #expect(missingComma?.location == "line 2, column 2", "\(String(describing: missingComma))")
    }

    @Test("unknown keys and names suggest the closest allowed one")
    func suggestions() {
        let cases: [(String, String, String)] = [
            (#""trainig": {}"#, ".trainig", "did you mean `training`?"),
            (#""training": {"epoch": 2}"#, ".training.epoch", "did you mean `epochs`?"),
            (#""optimizer": {"type": "sgd", "momentun": 0.5}"#, ".optimizer.momentun", "did you mean `momentum`?"),
            (#""strategy": "ewcc""#, ".strategy[0].type", "did you mean `ewc`?"),
            (#""training": {"mode": "prequental"}"#, ".training.mode", "did you mean `prequential`?"),
            (#""sweep": {"parameters": {"optimzer.lr": [0.1]}}"#, ".sweep.parameters[\"optimzer.lr\"]", "did you mean `optimizer`?"),
            (#""sweep": {"paramters": {}}"#, ".sweep.paramters", "did you mean `parameters`?"),
        ]
        for (extra, location, words) in cases {
            let e = error(#"{\#(Self.base), \#(extra)}"#)
            #expect(e?.location == location, "\(extra): \(String(describing: e))")
            #expect(e?.message.contains(words) == true, "\(extra): \(String(describing: e))")
        }
        let scenario = error(#"{"name": "x", "scenario": "habit_drif"}"#)
        #expect(scenario?.message.contains("did you mean `habit_drift`?") == true)
        // Nothing close: no suggestion.
        #expect(error(#"{\#(Self.base), "zzzzzz": 1}"#)?.message.contains("did you mean") == false)
    }

    @Test("long values are shortened in messages")
    func longValues() {
        let long = String(repeating: "a", count: 5000)
        let e = error(#"{"name": "x", "scenario": {"type": "habit_drift", "phases": ["\#(long)"]}}"#)
        let text = e?.description ?? ""
        #expect(text.contains(String(repeating: "a", count: 60) + "…") && !text.contains(String(repeating: "a", count: 61)), "\(text.prefix(300))")
        let key = error(#"{\#(Self.base), "\#(long)": 1}"#)?.description ?? ""
        #expect(key.count < 1000 && key.contains("…"))
    }
}
