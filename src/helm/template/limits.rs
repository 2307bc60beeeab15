//! What one render may spend, so a chart written to hurt ends with an error instead of
//! exhausting the machine: a budget of work (template steps), a budget of memory (bytes of
//! text and values the render makes), and bounds on nesting (of the template text, of the
//! values a function walks, and of this thread's stack). Go has no such budgets (its stacks
//! grow and a process may take all memory); the defaults are far above what real charts use
//! (RELIABILITY.md lists them and the flags that raise them).

use super::value::Value;
use std::collections::HashMap;

/// The budgets of one release's render (`--helm-max-steps`, `--helm-max-bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// Template steps: nodes walked, function calls, items ranged over, and the length of
    /// the lists and strings functions work through.
    pub steps: u64,
    /// Bytes of text and values the render makes (output, strings, lists and maps that
    /// functions return), counted as they are made.
    pub bytes: u64,
}

impl Default for RenderLimits {
    fn default() -> Self {
        RenderLimits {
            steps: 50_000_000,
            bytes: 1 << 30,
        }
    }
}

/// How deep a template's actions and parentheses may nest (`{{if}}` in `{{if}}`, `((x))`).
/// Go limits parentheses to 10,000 and control structures only by its growing stack; tend's
/// stacks are fixed, and no chart nests anywhere near this.
pub const MAX_NESTING: usize = 1000;

/// How deep a value a function walks (`toYaml`, `toJson`, `deepCopy`, `print`, `eq`, ...)
/// may be: values files are refused past 128 levels, so only a template that builds a value
/// in a loop gets here.
pub const MAX_VALUE_DEPTH: usize = 256;

/// Whether less than 256 KiB of this thread's stack is left. Go's stacks grow, so Helm's
/// limits never overflow them; ours are fixed (2 MiB for a spawned thread), so a recursion
/// the input drives (nested templates, nested parse trees) must stop here, as an error,
/// before it aborts the process.
#[cfg(target_os = "linux")]
pub fn stack_nearly_full() -> bool {
    thread_local! {
        static LOW: usize = {
            let mut low = 0usize;
            // SAFETY: attr is initialised by pthread_getattr_np before it is read and
            // destroyed after; the calls only read this thread's attributes.
            unsafe {
                let mut attr: libc::pthread_attr_t = std::mem::zeroed();
                if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) == 0 {
                    let mut addr = std::ptr::null_mut();
                    let mut size = 0;
                    if libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0 {
                        low = addr as usize;
                    }
                    libc::pthread_attr_destroy(&mut attr);
                }
            }
            low
        };
    }
    let marker = 0u8;
    let here = std::ptr::addr_of!(marker) as usize;
    LOW.with(|&low| low != 0 && here.saturating_sub(low) < 256 * 1024)
}

#[cfg(not(target_os = "linux"))]
pub fn stack_nearly_full() -> bool {
    false
}

/// The error of a spent step budget.
pub fn steps_spent(limits: &RenderLimits) -> String {
    format!(
        "the render took more than its budget of {} template steps (a loop too long or one that never ends); if the chart really needs more, raise it with --helm-max-steps",
        limits.steps
    )
}

/// The error of a spent memory budget.
pub fn bytes_spent(limits: &RenderLimits) -> String {
    format!(
        "the render made more than its budget of {} bytes of text and values (a string, list or output too large); if the chart really needs more, raise it with --helm-max-bytes",
        limits.bytes
    )
}

/// Why a value cannot be walked whole.
#[derive(Debug, PartialEq)]
pub enum WalkError {
    /// A map holds itself (through `set`, `merge`, ...): Go's encoders say
    /// "encountered a cycle"; its printers never end.
    Cycle,
    /// Nested deeper than [`MAX_VALUE_DEPTH`].
    TooDeep,
    /// Written out in full (maps and lists shared many times over are written once per
    /// holder), larger than the bytes left.
    TooLarge,
}

impl WalkError {
    pub fn message(&self, limits: &RenderLimits) -> String {
        match self {
            WalkError::Cycle => {
                "encountered a cycle via map[string]interface {}: the value holds itself".into()
            }
            WalkError::TooDeep => {
                format!("the value is nested more than {MAX_VALUE_DEPTH} levels deep")
            }
            WalkError::TooLarge => bytes_spent(limits),
        }
    }
}

/// The size of `value` written out in full, in bytes (about what `toJson` writes), if it is
/// at most `room`, has no cycle and is at most [`MAX_VALUE_DEPTH`] deep. Maps and lists met
/// again are counted from a memo, so this takes time in the number of distinct containers
/// however many times they are shared.
pub fn expanded_size(value: &Value, room: u64) -> Result<u64, WalkError> {
    let mut walk = Walk {
        memo: HashMap::new(),
        on_path: Vec::new(),
        room,
    };
    walk.size(value, 0).map(|(size, _)| size)
}

struct Walk {
    /// Size and height of each container walked, by address.
    memo: HashMap<usize, (u64, usize)>,
    /// The maps from the root to here (a map met again on it is a cycle).
    on_path: Vec<usize>,
    room: u64,
}

impl Walk {
    fn size(&mut self, value: &Value, depth: usize) -> Result<(u64, usize), WalkError> {
        let address = match value {
            Value::List(l) => std::rc::Rc::as_ptr(l) as *const u8 as usize,
            Value::Map(m) => std::rc::Rc::as_ptr(m) as *const u8 as usize,
            Value::Str(s) => return Ok((s.len() as u64 + 2, 0)),
            Value::Struct(s) => return Ok((s.json.to_string().len() as u64, 1)),
            _ => return Ok((8, 0)),
        };
        if self.on_path.contains(&address) {
            return Err(WalkError::Cycle);
        }
        if let Some(&(size, height)) = self.memo.get(&address) {
            return if depth + height > MAX_VALUE_DEPTH {
                Err(WalkError::TooDeep)
            } else {
                Ok((size, height))
            };
        }
        if depth >= MAX_VALUE_DEPTH {
            return Err(WalkError::TooDeep);
        }
        self.on_path.push(address);
        let mut total: u64 = 2;
        let mut height = 0;
        let mut add = |walk: &mut Walk, extra: u64, child: &Value| {
            let (size, h) = walk.size(child, depth + 1)?;
            total = total.saturating_add(size).saturating_add(extra);
            height = height.max(h + 1);
            if total > walk.room {
                return Err(WalkError::TooLarge);
            }
            Ok(())
        };
        let result = match value {
            Value::List(l) => l.iter().try_for_each(|item| add(self, 1, item)),
            Value::Map(m) => m
                .borrow()
                .iter()
                .try_for_each(|(k, item)| add(self, k.len() as u64 + 4, item)),
            _ => Ok(()),
        };
        self.on_path.pop();
        result?;
        self.memo.insert(address, (total, height));
        Ok((total, height))
    }
}

/// What making `value` costs the memory budget: a string's bytes, a list's or map's own
/// slots (its items were counted when they were made).
pub fn shallow_size(value: &Value) -> u64 {
    match value {
        Value::Str(s) => s.len() as u64,
        Value::List(l) => 24 * l.len() as u64,
        Value::Map(m) => 80 * m.borrow().len() as u64,
        _ => 0,
    }
}

/// Whether `made` is one of `args` handed back (`set`, `default`, `index`): nothing new made.
pub fn is_one_of(made: &Value, args: &[Value]) -> bool {
    args.iter().any(|arg| match (made, arg) {
        (Value::Str(a), Value::Str(b)) => std::rc::Rc::ptr_eq(a, b),
        (Value::List(a), Value::List(b)) => std::rc::Rc::ptr_eq(a, b),
        (Value::Map(a), Value::Map(b)) => std::rc::Rc::ptr_eq(a, b),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_of(entries: Vec<(&str, Value)>) -> Value {
        Value::map(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    #[test]
    fn a_map_that_holds_itself_is_a_cycle() {
        let d = Value::empty_map();
        if let Value::Map(m) = &d {
            m.borrow_mut().insert("x".into(), d.clone());
        }
        assert_eq!(expanded_size(&d, u64::MAX), Err(WalkError::Cycle));
        // Break the cycle, so the test leaks nothing.
        if let Value::Map(m) = &d {
            m.borrow_mut().clear();
        }
    }

    #[test]
    fn shared_values_count_once_per_holder_but_are_walked_once() {
        let mut v = Value::str("0123456789");
        for _ in 0..64 {
            v = map_of(vec![("a", v.clone()), ("b", v)]);
        }
        assert_eq!(expanded_size(&v, 1 << 30), Err(WalkError::TooLarge));
        let small = map_of(vec![("a", Value::int(1))]);
        assert!(expanded_size(&small, 100).is_ok());
    }

    #[test]
    fn deep_values_are_refused() {
        let mut v = Value::Nil;
        for _ in 0..MAX_VALUE_DEPTH + 1 {
            v = Value::list(vec![v]);
        }
        assert_eq!(expanded_size(&v, u64::MAX), Err(WalkError::TooDeep));
    }
}
