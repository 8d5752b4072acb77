"""Calling hooks safely: pluggy's order, markers and wrappers, with coroutine implementations awaited.

pluggy's own caller would hand back a coroutine unawaited, so, as Bub does, the runtime walks pluggy's
implementations itself. It reads everything pluggy reads: the call order (the plugin registered last
first, moved by ``tryfirst``/``trylast``), ``firstresult`` from the hook's spec, and implementations
marked ``wrapper=True`` or ``hookwrapper=True``, which run around the others as pluggy documents.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any

import pluggy
from pluggy import HookImpl

from bub_nb.agent.hooks.specs import BUB_ONLY_HOOKS, BUB_PROJECT, PROJECT, TurnSpecs
from bub_nb.errors import PipelineError

logger = logging.getLogger(__name__)

_NO_TOOLS = " (Bub's tools are not offered in a notebook)"

Body = Callable[[], Awaitable[Any]]


class _Plugins(pluggy.PluginManager):
    """pluggy's manager for project ``bub_nb`` that also reads the markers of Bub's (``@bub.hookimpl``, project
    ``bub``): a plugin written for Bub registers as it is, its hooks called where bub_nb calls them."""

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is not None:
            return opts
        method = getattr(plugin, name, None)
        if not inspect.isroutine(method):
            return None
        try:
            bub = getattr(method, f"{BUB_PROJECT}_impl", None)
        except Exception:  # an attribute that raises is not a marker
            return None
        return dict(bub) if isinstance(bub, dict) else None


class HookRuntime:
    """The plugins of one pipeline, and every call into their hooks (declared by ``specs``)."""

    def __init__(self, specs: type = TurnSpecs) -> None:
        self._specs = specs
        self._plugins = _Plugins(PROJECT)
        self.refused: dict[str, str] = {}
        """Plugins of Bub's entry-point group that were not loaded, by name, with the one line saying why."""
        self._plugins.add_hookspecs(specs)
        # Each hook's (answering implementations, wrappers, firstresult), until the plugins change.
        self._plans: dict[str, tuple[list[HookImpl], list[HookImpl], bool]] = {}

    # -- the plugins -----------------------------------------------------------------------------

    def register(self, plugin: object, name: str | None = None) -> str:
        """Register ``plugin`` above every plugin registered before it; returns its name.

        Refused with one line: a plugin pluggy refuses (the same object twice, a wrapper that is not a
        generator function, arguments its hook does not have), and a hook that is not one of bub_nb's.
        """
        self._plans.clear()
        try:
            registered = self._plugins.register(plugin, name=name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            reason = " ".join(str(exc).split())
            raise PipelineError(f"Plugin {name or plugin!r} cannot be registered: {reason}") from None
        if registered is None:  # pluggy returns None for a blocked name
            raise PipelineError(f"Plugin name {name!r} is blocked")
        self._check(plugin, registered)
        return registered

    def load_entry_points(self, *, bub: bool = True) -> None:
        """Register the plugins of the ``bub_nb`` entry-point group, refused as :meth:`register` refuses, then
        (with ``bub``) those of Bub's group ``bub``.

        A plugin of Bub's group that cannot run in a notebook (it needs Bub's own package, or implements a hook
        that has no meaning here) is left out with one logged line, kept in :attr:`refused`: a Bub setup brought
        into a notebook must not stop every turn.
        """
        self._plans.clear()
        try:
            self._plugins.load_setuptools_entrypoints(PROJECT)
        except pluggy.PluginValidationError as exc:
            raise PipelineError(f"An entry-point plugin cannot be registered: {' '.join(str(exc).split())}") from None
        for name, plugin in self._plugins.list_name_plugin():
            self._check(plugin, name)
        if bub:
            self._load_bub_entry_points()

    def _load_bub_entry_points(self) -> None:
        for entry_point in importlib.metadata.entry_points(group=BUB_PROJECT):
            name = entry_point.name
            if self._plugins.get_plugin(name) is not None or self._plugins.is_blocked(name):
                continue
            try:
                plugin = entry_point.load()
            except Exception as exc:  # an import error inside a plugin is the plugin's, and says so
                reason = " ".join(f"{type(exc).__name__}: {exc}".split())
                self.refused[name] = f"Bub plugin {name!r} cannot be loaded: {reason}"
            else:
                try:
                    self.register(plugin, name=name)
                except PipelineError as exc:
                    self.refused[name] = str(exc)
                else:
                    if not self._plugins.get_hookcallers(plugin):  # Bub tools alone, say: nothing would ever run
                        self.unregister(name)
                        self.refused[name] = f"Bub plugin {name!r} implements no hook bub_nb calls" + _NO_TOOLS
            if name in self.refused:
                logger.warning("%s", self.refused[name])

    def _check(self, plugin: object, name: str) -> None:
        """Refuse a plugin implementing a hook bub_nb never calls: it would be silently ignored."""
        for caller in self._plugins.get_hookcallers(plugin) or ():
            optional = all(impl.optionalhook for impl in caller.get_hookimpls() if impl.plugin is plugin)
            if not caller.has_spec() and not optional:
                self._plugins.unregister(plugin)
                hooks = ", ".join(sorted(name for name in vars(self._specs) if not name.startswith("_")))
                why = BUB_ONLY_HOOKS.get(caller.name)
                if why is not None:
                    raise PipelineError(
                        f"Plugin {name!r} implements Bub's {caller.name!r}, which bub_nb does not call: {why}"
                    )
                raise PipelineError(
                    f"Plugin {name!r} implements {caller.name!r}, which is not a bub_nb hook; the hooks are: {hooks}"
                )

    def unregister(self, name: str) -> None:
        self._plans.clear()
        self._plugins.unregister(name=name)

    def get_plugin(self, name: str) -> object | None:
        return self._plugins.get_plugin(name)

    def has_plugin(self, name: str) -> bool:
        return self._plugins.get_plugin(name) is not None

    @property
    def plugin_names(self) -> list[str]:
        """Registered plugin names, the one that runs first first."""
        return [name for name, _ in reversed(self._plugins.list_name_plugin())]

    # -- what pluggy knows of a hook -------------------------------------------------------------

    def firstresult(self, hook: str) -> bool:
        """Whether the hook's spec says the first non-``None`` answer ends the call."""
        return self._plan(hook)[2]

    def implementations(self, hook: str) -> list[HookImpl]:
        """The implementations that answer ``hook``, in the order pluggy calls them; wrappers left out."""
        return list(self._plan(hook)[0])

    def wrappers(self, hook: str) -> list[HookImpl]:
        """The implementations marked ``wrapper``/``hookwrapper``, outermost first."""
        return list(self._plan(hook)[1])

    def _plan(self, hook: str) -> tuple[list[HookImpl], list[HookImpl], bool]:
        plan = self._plans.get(hook)
        if plan is None:
            caller = getattr(self._plugins.hook, hook, None)
            if caller is None or not caller.has_spec():
                raise PipelineError(f"{hook!r} is not a bub_nb hook")
            ordered = list(reversed(caller.get_hookimpls()))  # pluggy's call order, markers applied
            first = bool(caller.spec.opts.get("firstresult"))
            plan = self._plans[hook] = ([i for i in ordered if not _wraps(i)], [i for i in ordered if _wraps(i)], first)
        return plan

    # -- calls -------------------------------------------------------------------------------------

    async def call(self, hook: str, **arguments: Any) -> Any:
        """Call ``hook``: its first non-``None`` answer when its spec is firstresult, else every non-``None`` answer."""
        impls, _, first = self._plan(hook)

        async def answers() -> Any:
            found = []
            for impl in impls:
                value = await invoke(impl, arguments)
                if value is not None:
                    if first:
                        return value
                    found.append(value)
            return None if first else found

        return await self.around(hook, arguments, answers)

    def call_sync(self, hook: str, **arguments: Any) -> Any:
        """:meth:`call` for hooks asked from synchronous code: an implementation must not be a coroutine."""
        impls, wrappers, first = self._plan(hook)
        if not wrappers:
            return _answers_sync(impls, arguments, first)
        wrapping = Wrapping(hook, wrappers, arguments)
        try:
            wrapping.enter()
            result = _answers_sync(impls, arguments, first)
        except BaseException as exc:
            return wrapping.leave(None, exc)
        return wrapping.leave(result, None)

    async def around(self, hook: str, arguments: Mapping[str, Any], body: Body) -> Any:
        """Run ``body`` (the hook's answers) inside the hook's wrappers; what they return is the call's result."""
        wrappers = self._plan(hook)[1]
        if not wrappers:
            return await body()
        wrapping = Wrapping(hook, wrappers, arguments)
        try:
            wrapping.enter()
            result = await body()
        except BaseException as exc:
            return wrapping.leave(None, exc)
        return wrapping.leave(result, None)

    async def notify(self, hook: str, **arguments: Any) -> None:
        """Call every observer of ``hook``; one that raises (a wrapper too) is logged and skipped, silencing none."""

        async def observe() -> None:
            for impl in self._plan(hook)[0]:
                try:
                    await invoke(impl, arguments)
                except Exception:
                    logger.exception("%s observer %r failed", hook, impl.plugin_name)

        try:
            await self.around(hook, arguments, observe)
        except Exception:  # a wrapper of the observers is an observer too
            logger.exception("a %s wrapper failed", hook)


class Wrapping:
    """The wrappers of one call: set up outermost first, torn down innermost first, as pluggy runs them.

    A ``wrapper=True`` generator gets the result (or the exception, thrown in) at its ``yield`` and its
    return value becomes the result; a ``hookwrapper=True`` one gets a :class:`pluggy.Result` it may force.
    """

    def __init__(self, hook: str, wrappers: list[HookImpl], arguments: Mapping[str, Any]) -> None:
        self._hook = hook
        self._wrappers = wrappers
        self._arguments = arguments
        self._entered: list[tuple[HookImpl, Generator[Any, Any, Any]]] = []

    def enter(self) -> None:
        for impl in self._wrappers:
            teardown = call_impl(impl, self._arguments)
            try:
                next(teardown)
            except StopIteration:
                raise PipelineError(self._misbehaved(impl, "returned without yielding")) from None
            self._entered.append((impl, teardown))

    def leave(self, result: Any, error: BaseException | None) -> Any:
        for impl, teardown in reversed(self._entered):
            if impl.hookwrapper:
                result, error = self._leave_old_style(impl, teardown, result, error)
                continue
            try:
                if error is not None:
                    teardown.throw(error)
                else:
                    teardown.send(result)
            except StopIteration as stop:
                result, error = stop.value, None
                continue
            except BaseException as exc:
                error = exc
                continue
            teardown.close()
            error = PipelineError(self._misbehaved(impl, "yielded twice"))
        if error is not None:
            raise error
        return result

    def _leave_old_style(
        self, impl: HookImpl, teardown: Generator[Any, Any, Any], result: Any, error: BaseException | None
    ) -> tuple[Any, BaseException | None]:
        outcome = pluggy.Result(result, error)
        try:
            teardown.send(outcome)
        except StopIteration:
            pass
        except BaseException as exc:
            return None, exc
        else:
            teardown.close()
            return None, PipelineError(self._misbehaved(impl, "yielded twice"))
        if outcome.exception is not None:
            return None, outcome.exception
        return outcome.get_result(), None

    def _misbehaved(self, impl: HookImpl, what: str) -> str:
        return f"The {self._hook!r} wrapper of plugin {impl.plugin_name!r} {what}; a wrapper yields exactly once"


def _answers_sync(impls: list[HookImpl], arguments: Mapping[str, Any], first: bool) -> Any:
    found = []
    for impl in impls:
        value = invoke_sync(impl, arguments)
        if value is not None:
            if first:
                return value
            found.append(value)
    return None if first else found


def _wraps(impl: HookImpl) -> bool:
    return bool(impl.wrapper or impl.hookwrapper)


def hook_of(impl: HookImpl) -> str:
    """The hook ``impl`` implements (its ``specname`` when it has one)."""
    return str(impl.opts.get("specname") or impl.function.__name__)


def call_impl(impl: HookImpl, arguments: Mapping[str, Any]) -> Any:
    """Call ``impl`` with the arguments it names (an implementation may take any subset of its hook's)."""
    names = (*impl.argnames, *impl.kwargnames)
    return impl.function(**{name: arguments[name] for name in names if name in arguments})


async def invoke(impl: HookImpl, arguments: Mapping[str, Any]) -> Any:
    """Call ``impl``, awaiting what it returns when that is awaitable."""
    value = call_impl(impl, arguments)
    return await value if inspect.isawaitable(value) else value


def invoke_sync(impl: HookImpl, arguments: Mapping[str, Any]) -> Any:
    """Call ``impl`` from synchronous code, refusing a coroutine with one line naming it."""
    value = call_impl(impl, arguments)
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        raise TypeError(f"Hook {hook_of(impl)!r} of plugin {impl.plugin_name!r} must be synchronous")
    return value
