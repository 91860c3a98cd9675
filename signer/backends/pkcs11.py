"""The PKCS#11 backend: keys made inside a token (an HSM, or SoftHSMv2 in tests) and used there.

Pure: no Django. The owner passes the module path, the token label and the user PIN from settings.

Reference format: the CKA_ID the key pair shares in the token, 16 random bytes written as 32 lowercase
hex characters (`3f9c...`). Both objects also carry CKA_LABEL = the label given to `generate`, for the
token's operator; the label is never used to find a key (it need not be unique).

Threads: the signer serves a thread per connection. Each backend keeps a small pool of sessions, each used
by one thread at a time, and caches private key handles per session (PKCS#11 lets a token scope handles
to a session; SoftHSM happens to share them across an application's sessions, which we do not rely on).
The login belongs to the application, not to a session, so one logged-in session per token and process
holds it and the pool's sessions open without a PIN.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import hmac
import queue
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pkcs11
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pkcs11 import Attribute, KeyType, Mechanism, MechanismFlag, ObjectClass
from pkcs11.exceptions import MultipleObjectsReturned, MultipleTokensReturned, NoSuchKey, NoSuchToken, PKCS11Error

from signer.backends.base import ALGORITHMS, BackendError, KeyBackend, NewKey, UnsupportedAlgorithm

# Numbers from the OASIS PKCS#11 3.2 header, oasis-tcs/pkcs11 published/3-02/pkcs11t.h (commit
# 1c311902); the ML-DSA ones are new in 3.2 (section "ML-DSA" of the 3.2 text: the key pair mechanism
# takes no parameter, the parameter set goes in the public template; CKM_ML_DSA without a parameter is
# pure ML-DSA with an empty context).
CKK_EC = 0x00000003
CKK_EC_EDWARDS = 0x00000040
CKK_ML_DSA = 0x0000004A
CKM_EC_KEY_PAIR_GEN = 0x00001040
CKM_ECDSA = 0x00001041
CKM_EC_EDWARDS_KEY_PAIR_GEN = 0x00001055
CKM_EDDSA = 0x00001057
CKM_ML_DSA_KEY_PAIR_GEN = 0x0000001C
CKM_ML_DSA = 0x0000001D
CKA_PARAMETER_SET = 0x0000061D
CKA_SEED = 0x00000637  # 3.2: an ML-DSA private key's 32-byte seed (FIPS 204 xi)
CKP_ML_DSA_65 = 0x00000002
CKF_OS_LOCKING_OK = 0x00000002
CKR_OK = 0x00000000
CKR_CANT_LOCK = 0x0000000A

# CKA_EC_PARAMS: the DER OID of the curve. prime256v1 is 1.2.840.10045.3.1.7; Ed25519 is id-Ed25519
# 1.3.101.112 (RFC 8410), which SoftHSM 2.6.1 accepts (its other form, the printable string
# "edwards25519", is not needed).
P256_PARAMS = bytes.fromhex("06082a8648ce3d030107")
ED25519_PARAMS = bytes.fromhex("06032b6570")

KEY_ID_BYTES = 16
DEFAULT_SESSIONS = 4


@dataclass(frozen=True)
class KeyRecipe:
    """How one algorithm's keys are made, used and read back in a PKCS#11 token."""

    key_type: int
    generate_mechanism: int
    sign_mechanism: int
    public_attributes: dict[int, Any]  # what selects the curve or parameter set
    public_key_attribute: int  # where the public key is read back
    public_key_length: int


RECIPES = {
    "es256": KeyRecipe(CKK_EC, CKM_EC_KEY_PAIR_GEN, CKM_ECDSA, {Attribute.EC_PARAMS: P256_PARAMS},
                       Attribute.EC_POINT, 65),
    "ed25519": KeyRecipe(CKK_EC_EDWARDS, CKM_EC_EDWARDS_KEY_PAIR_GEN, CKM_EDDSA, {Attribute.EC_PARAMS: ED25519_PARAMS},
                         Attribute.EC_POINT, 32),
    "ml-dsa-65": KeyRecipe(CKK_ML_DSA, CKM_ML_DSA_KEY_PAIR_GEN, CKM_ML_DSA, {CKA_PARAMETER_SET: CKP_ML_DSA_65},
                           Attribute.VALUE, 1952),
}


@dataclass(frozen=True)
class KeyPairRequest:
    """What C_GenerateKeyPair receives for one new key: the mechanism and both templates."""

    key_type: int
    mechanism: int
    public_template: dict[int, Any]
    private_template: dict[int, Any]


def key_pair_request(algorithm: str, label: str, key_id: bytes) -> KeyPairRequest:
    """The mechanism and templates that make a key pair of `algorithm` inside the token: a private key
    that stays there (sensitive, never extractable) and its public key, both stored on the token under
    `key_id` and `label`."""
    recipe = RECIPES[algorithm]
    common = {Attribute.TOKEN: True, Attribute.ID: key_id, Attribute.LABEL: label}
    public_template = {
        Attribute.CLASS: ObjectClass.PUBLIC_KEY,
        Attribute.KEY_TYPE: recipe.key_type,
        **common,
        Attribute.VERIFY: True,
        **recipe.public_attributes,
    }
    private_template = {
        Attribute.CLASS: ObjectClass.PRIVATE_KEY,
        Attribute.KEY_TYPE: recipe.key_type,
        **common,
        Attribute.PRIVATE: True,
        Attribute.SENSITIVE: True,
        Attribute.EXTRACTABLE: False,
        Attribute.SIGN: True,
    }
    return KeyPairRequest(recipe.key_type, recipe.generate_mechanism, public_template, private_template)


@dataclass(frozen=True)
class KeyImport:
    """What C_CreateObject receives for a key taken in: its public key object, then its private key object."""

    public_template: dict[int, Any]
    private_template: dict[int, Any]


def key_import_request(algorithm: str, private_key: bytes, public_key: bytes, label: str,
                       key_id: bytes) -> KeyImport:
    """The two objects of an existing key: the same attributes as a key made in the token (sensitive, never
    extractable, on the token under `key_id` and `label`), plus the key's values (the curve or parameter set
    on the private key too, as C_CreateObject needs it)."""
    recipe = RECIPES[algorithm]
    made = key_pair_request(algorithm, label, key_id)
    if recipe.public_key_attribute == Attribute.EC_POINT:  # a DER OCTET STRING around the point
        public_value = bytes((0x04, len(public_key))) + public_key
    else:
        public_value = public_key
    private_attribute = CKA_SEED if algorithm == "ml-dsa-65" else Attribute.VALUE  # EC: the scalar; EdDSA: the seed
    return KeyImport({**made.public_template, recipe.public_key_attribute: public_value},
                     {**made.private_template, **recipe.public_attributes, private_attribute: private_key})


def public_key_of(algorithm: str, private_key: bytes) -> bytes:
    """The public key (encodings of signer/backends/base.py) of a private key as import_key takes it.
    Raises BackendError for one that is not a key of `algorithm`."""
    if len(private_key) != 32:
        raise BackendError(f"an {algorithm} private key to import is 32 bytes, not {len(private_key)}")
    try:
        if algorithm == "es256":
            key = ec.derive_private_key(int.from_bytes(private_key, "big"), ec.SECP256R1())
            return key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
        if algorithm == "ed25519":
            return Ed25519PrivateKey.from_private_bytes(private_key).public_key().public_bytes_raw()
        return MLDSA65PrivateKey.from_seed_bytes(private_key).public_key().public_bytes_raw()
    except ValueError:
        raise BackendError(f"not an {algorithm} private key") from None


def return_value_name(error: PKCS11Error) -> str:
    """The CKR_ name behind one of python-pkcs11's exceptions (PinIncorrect -> CKR_PIN_INCORRECT)."""
    irregular = {
        "AnotherUserAlreadyLoggedIn": "CKR_USER_ANOTHER_ALREADY_LOGGED_IN",
        "FunctionCancelled": "CKR_FUNCTION_CANCELED",
        "RandomNoRNG": "CKR_RANDOM_NO_RNG",
        "SessionReadWriteSOExists": "CKR_SESSION_READ_WRITE_SO_EXISTS",
        "SlotIDInvalid": "CKR_SLOT_ID_INVALID",
        "TokenNotRecognised": "CKR_TOKEN_NOT_RECOGNIZED",
    }
    name = type(error).__name__
    if type(error) is PKCS11Error:
        return str(error) or "PKCS11Error"  # python-pkcs11's text for codes it has no class for
    return irregular.get(name) or "CKR_" + re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


class SessionLost(BackendError):
    """The session the call went through is gone (closed, its token removed or its device failed): it must not
    go back to the pool."""


# Return values after which a session serves no further call.
_SESSION_LOST = (pkcs11.exceptions.SessionHandleInvalid, pkcs11.exceptions.SessionClosed,
                 pkcs11.exceptions.DeviceRemoved, pkcs11.exceptions.TokenNotPresent, pkcs11.exceptions.DeviceError)


@contextlib.contextmanager
def token_errors(operation: str) -> Iterator[None]:
    """Turns a token's refusal into BackendError naming the PKCS#11 return value (never the PIN); SessionLost
    when the session is gone."""
    try:
        yield
    except PKCS11Error as error:
        kind = SessionLost if isinstance(error, _SESSION_LOST) else BackendError
        raise kind(f"PKCS#11 {operation} failed: {return_value_name(error)}") from None


class _CK_VERSION(ctypes.Structure):
    _fields_ = [("major", ctypes.c_ubyte), ("minor", ctypes.c_ubyte)]


class _CK_C_INITIALIZE_ARGS(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in ("CreateMutex", "DestroyMutex", "LockMutex", "UnlockMutex")]
    _fields_ += [("flags", ctypes.c_ulong), ("pReserved", ctypes.c_void_p)]


_CK_FUNCTION = ctypes.CFUNCTYPE(ctypes.c_ulong, ctypes.c_void_p)


class _CK_FUNCTION_LIST_HEAD(ctypes.Structure):
    # The first entries of CK_FUNCTION_LIST; the rest stays python-pkcs11's business.
    _fields_ = [("version", _CK_VERSION), ("C_Initialize", _CK_FUNCTION), ("C_Finalize", _CK_FUNCTION)]


def _initialize_for_threads(module_path: str) -> bool:
    """Re-initializes the module telling it that several threads call it at once (CKF_OS_LOCKING_OK).

    python-pkcs11 0.10 calls C_Initialize(NULL), which per PKCS#11 promises single-threaded use; SoftHSM
    then switches its own locks off (SoftHSM.cpp: "No concurrent access by multiple threads") and four
    threads signing on four sessions crash it (seen here). The module is the same loaded image, so
    finalizing and initializing it again through its function list keeps python-pkcs11's pointers valid.
    Returns False when the module cannot lock (CKR_CANT_LOCK): then every call must be serialized."""
    module = ctypes.CDLL(module_path)
    functions = ctypes.POINTER(_CK_FUNCTION_LIST_HEAD)()
    module.C_GetFunctionList.argtypes = [ctypes.POINTER(ctypes.POINTER(_CK_FUNCTION_LIST_HEAD))]
    if module.C_GetFunctionList(ctypes.byref(functions)) != CKR_OK:
        raise BackendError("PKCS#11 C_GetFunctionList failed")
    functions.contents.C_Finalize(None)
    arguments = _CK_C_INITIALIZE_ARGS(flags=CKF_OS_LOCKING_OK)
    return_value = functions.contents.C_Initialize(ctypes.cast(ctypes.byref(arguments), ctypes.c_void_p))
    if return_value == CKR_CANT_LOCK:
        return_value = functions.contents.C_Initialize(None)
        if return_value == CKR_OK:
            return False
    if return_value != CKR_OK:
        raise BackendError(f"PKCS#11 C_Initialize failed: {return_value:#x}")
    return True


@dataclass
class _Module:
    library: Any  # pkcs11.lib
    call_gate: Any  # a lock when the module cannot take concurrent calls, else a no-op context


_modules: dict[str, _Module] = {}
_modules_lock = threading.Lock()


def _module(module_path: str) -> _Module:
    """The module loaded and initialized once per process (PKCS#11 allows one C_Initialize). The backend
    must be the first in the process to load it: re-initializing would end other users' sessions."""
    with _modules_lock:
        if module_path not in _modules:
            try:
                library = pkcs11.lib(module_path)
            except PKCS11Error as error:
                raise BackendError(f"cannot load the PKCS#11 module {module_path}: {error}") from None
            is_threaded = _initialize_for_threads(module_path)
            gate = contextlib.nullcontext() if is_threaded else threading.Lock()
            _modules[module_path] = _Module(library, gate)
        return _modules[module_path]


@dataclass
class _Login:
    session: Any  # the logged-in session that holds the application's login
    pin_digest: bytes
    users: int


_logins: dict[tuple[str, str], _Login] = {}
_logins_lock = threading.Lock()


_PIN_DIGEST_KEY = secrets.token_bytes(32)  # per process: the digest is no offline guess of the PIN


def _pin_digest(pin: str) -> bytes:
    return hmac.new(_PIN_DIGEST_KEY, pin.encode(), hashlib.sha256).digest()


def _login(module_path: str, token: Any, pin: str) -> None:
    """Logs the application in to `token` once; later backends on the same token share that login.
    A backend whose PIN differs from the one logged in is refused, as the token would refuse it."""
    key = (module_path, token.label)
    with _logins_lock:
        login = _logins.get(key)
        if login is not None:
            if not hmac.compare_digest(login.pin_digest, _pin_digest(pin)):
                raise BackendError("PKCS#11 login failed: CKR_PIN_INCORRECT")
            login.users += 1
            return
        with token_errors("login"):
            # On a refused PIN python-pkcs11 leaves the session it opened for C_Login open (it has no
            # C_CloseAllSessions to call); one session per failed start.
            session = token.open(rw=True, user_pin=pin)
        _logins[key] = _Login(session, _pin_digest(pin), 1)


def _logout(module_path: str, token: Any) -> None:
    key = (module_path, token.label)
    with _logins_lock:
        login = _logins[key]
        login.users -= 1
        if login.users == 0:
            del _logins[key]
            with token_errors("logout"), contextlib.suppress(pkcs11.exceptions.UserNotLoggedIn):
                login.session.close()  # C_Logout, then C_CloseSession


class _PooledSession:
    """One token session and the private key objects found through it (handles may be per session)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.private_keys: dict[tuple[str, str], Any] = {}


class Pkcs11Backend(KeyBackend):
    """Keys generated and used inside a PKCS#11 token; the process only ever holds their handles."""

    name = "pkcs11"

    def __init__(self, module_path: str, token_label: str, pin: str, *, sessions: int = DEFAULT_SESSIONS):
        self._module_path = module_path
        self._module = _module(module_path)
        with token_errors("token lookup"):
            try:
                self._token = self._module.library.get_token(token_label=token_label)
            except (NoSuchToken, MultipleTokensReturned):
                raise BackendError(f"no single PKCS#11 token labelled {token_label!r}") from None
        self._mechanisms = self._token_mechanisms()  # a token's mechanisms do not change
        # Sessions back from use; None wakes a waiter after a session was dropped, to open another.
        self._idle: queue.LifoQueue[_PooledSession | None] = queue.LifoQueue()
        self._opened: list[_PooledSession] = []
        self._pool_lock = threading.Lock()
        self._pool_size = sessions
        self._is_closed = False
        _login(module_path, self._token, pin)

    def algorithms(self) -> frozenset[str]:
        mechanisms = self._mechanisms
        return frozenset(
            algorithm
            for algorithm, recipe in RECIPES.items()
            if {recipe.generate_mechanism, recipe.sign_mechanism} <= mechanisms
        )

    def generate(self, algorithm: str, label: str) -> NewKey:
        recipe = self._recipe(algorithm, self._mechanisms, needs_generation=True)
        key_id = secrets.token_bytes(KEY_ID_BYTES)
        request = key_pair_request(algorithm, label, key_id)
        with self._session() as pooled, token_errors("key generation"):
            public, _private = pooled.session.generate_keypair(
                KeyType(request.key_type),
                mechanism=Mechanism(request.mechanism),
                store=True,
                capabilities=MechanismFlag.SIGN | MechanismFlag.VERIFY,
                public_template=request.public_template,
                private_template=request.private_template,
            )
            public_key = self._read_public_key(public, recipe)
        return NewKey(public_key=public_key, reference=key_id.hex())

    def import_key(self, algorithm: str, private_key: bytes, label: str) -> NewKey:
        recipe = self._recipe(algorithm, self._mechanisms, needs_generation=False)
        public_key = public_key_of(algorithm, private_key)
        with self._session() as pooled, token_errors("key import"):
            key_id = self._imported_before(pooled, recipe, label, public_key)
            request = key_import_request(algorithm, private_key, public_key, label, key_id or
                                         secrets.token_bytes(KEY_ID_BYTES))
            if key_id is None:
                pooled.session.create_object(request.public_template)
                key_id = request.public_template[Attribute.ID]
            # The public object first: a run stopped between the two finds it by label and adds the private one.
            if not list(pooled.session.get_objects({Attribute.CLASS: ObjectClass.PRIVATE_KEY,
                                                    Attribute.KEY_TYPE: recipe.key_type, Attribute.ID: key_id})):
                pooled.session.create_object(request.private_template)
        return NewKey(public_key=public_key, reference=key_id.hex())

    def _imported_before(self, pooled: _PooledSession, recipe: KeyRecipe, label: str,
                         public_key: bytes) -> bytes | None:
        """The CKA_ID of the public key object labelled `label` holding `public_key`, if the token has one."""
        for public in pooled.session.get_objects({Attribute.CLASS: ObjectClass.PUBLIC_KEY,
                                                  Attribute.KEY_TYPE: recipe.key_type, Attribute.LABEL: label}):
            if self._read_public_key(public, recipe) == public_key:
                return bytes(public[Attribute.ID])
        return None

    def sign(self, reference: str, algorithm: str, message: bytes) -> bytes:
        recipe = self._recipe(algorithm, self._mechanisms, needs_generation=False)
        if recipe.sign_mechanism == CKM_ECDSA:
            message = hashlib.sha256(message).digest()  # CKM_ECDSA signs a digest; ES256 wants SHA-256
        with self._session() as pooled:
            private_key = self._private_key(pooled, reference, algorithm)
            with token_errors("signing"):
                try:
                    return private_key.sign(message, mechanism=Mechanism(recipe.sign_mechanism))
                except (pkcs11.exceptions.ObjectHandleInvalid, pkcs11.exceptions.KeyHandleInvalid):
                    pooled.private_keys.pop((reference, algorithm), None)  # deleted from the token
                    raise

    def public_key(self, reference: str, algorithm: str) -> bytes:
        recipe = self._recipe(algorithm, self._mechanisms, needs_generation=False)
        with self._session() as pooled:
            public = self._find_key(pooled, reference, recipe, ObjectClass.PUBLIC_KEY)
            with token_errors("public key read"):
                return self._read_public_key(public, recipe)

    def close(self) -> None:
        with self._pool_lock:
            if self._is_closed:
                return
            self._is_closed = True
            opened, self._opened = self._opened, []
        while not self._idle.empty():
            self._idle.get_nowait()
        for pooled in opened:
            with self._module.call_gate, token_errors("session close"), contextlib.suppress(SessionLost):
                pooled.session.close()
        _logout(self._module_path, self._token)

    def _token_mechanisms(self) -> frozenset[int]:
        with self._module.call_gate, token_errors("mechanism list"):
            return frozenset(int(mechanism) for mechanism in self._token.slot.get_mechanisms())

    def _recipe(self, algorithm: str, mechanisms: frozenset[int], *, needs_generation: bool) -> KeyRecipe:
        if algorithm not in ALGORITHMS:
            raise UnsupportedAlgorithm(f"unknown algorithm {algorithm!r}")
        recipe = RECIPES[algorithm]
        needed = [recipe.generate_mechanism, recipe.sign_mechanism] if needs_generation else [recipe.sign_mechanism]
        missing = ["CKM_" + Mechanism(mechanism).name for mechanism in needed if mechanism not in mechanisms]
        if missing:
            raise UnsupportedAlgorithm(
                f"token {self._token.label!r} does not offer {', '.join(missing)} (needed for {algorithm})"
            )
        return recipe

    @contextlib.contextmanager
    def _session(self) -> Iterator[_PooledSession]:
        """A session for this thread alone until the block ends; opens one while the pool is not full, else
        waits for one to come back. A session found gone is dropped, never handed out again."""
        pooled = self._take_session()
        try:
            with self._module.call_gate:
                yield pooled
        except SessionLost:
            self._drop(pooled)
            raise
        except BaseException:
            self._give_back(pooled)
            raise
        self._give_back(pooled)

    def _give_back(self, pooled: _PooledSession) -> None:
        if not self._is_closed:
            self._idle.put(pooled)

    def _drop(self, pooled: _PooledSession) -> None:
        with self._pool_lock:
            if pooled in self._opened:
                self._opened.remove(pooled)
        with self._module.call_gate, contextlib.suppress(PKCS11Error):
            pooled.session.close()  # most often refused: the token already ended it
        self._idle.put(None)  # a thread waiting for a session may open one in its place

    def _take_session(self) -> _PooledSession:
        while True:
            if self._is_closed:
                raise BackendError("the PKCS#11 backend is closed")
            try:
                pooled = self._idle.get_nowait()
            except queue.Empty:
                pooled = self._opened_session()
            if pooled is not None:
                return pooled

    def _opened_session(self) -> _PooledSession | None:
        """A new session while the pool is not full; else the next one given back (None: one was dropped)."""
        with self._pool_lock:
            if self._is_closed:
                raise BackendError("the PKCS#11 backend is closed")
            if len(self._opened) < self._pool_size:
                # Under the gate: a module that takes one call at a time takes C_OpenSession as one.
                with self._module.call_gate, token_errors("session open"):
                    pooled = _PooledSession(self._token.open(rw=True))  # logged in through the app's login
                self._opened.append(pooled)
                return pooled
        return self._idle.get()

    def _private_key(self, pooled: _PooledSession, reference: str, algorithm: str) -> Any:
        cached = pooled.private_keys.get((reference, algorithm))
        if cached is None:
            cached = self._find_key(pooled, reference, RECIPES[algorithm], ObjectClass.PRIVATE_KEY)
            pooled.private_keys[(reference, algorithm)] = cached
        return cached

    def _find_key(self, pooled: _PooledSession, reference: str, recipe: KeyRecipe, object_class: int) -> Any:
        key_id = _key_id(reference)
        with token_errors("key lookup"):
            try:
                return pooled.session.get_key(
                    object_class=ObjectClass(object_class), key_type=KeyType(recipe.key_type), id=key_id
                )
            except NoSuchKey:
                raise BackendError(f"no key {reference} of this algorithm in the token") from None
            except MultipleObjectsReturned:
                raise BackendError(f"several keys share the id {reference} in the token") from None

    @staticmethod
    def _read_public_key(public: Any, recipe: KeyRecipe) -> bytes:
        value = public[recipe.public_key_attribute]
        if recipe.public_key_attribute == Attribute.EC_POINT:
            return _unwrap_octet_string(value, recipe.public_key_length)
        if len(value) != recipe.public_key_length:
            raise BackendError(f"the token returned a public key of {len(value)} bytes")
        return value


def _key_id(reference: str) -> bytes:
    if len(reference) != 2 * KEY_ID_BYTES or not re.fullmatch("[0-9a-f]+", reference):
        raise BackendError("a PKCS#11 key reference is 32 lowercase hex characters")
    return bytes.fromhex(reference)


def _unwrap_octet_string(value: bytes, length: int) -> bytes:
    """CKA_EC_POINT is the point inside a DER OCTET STRING (PKCS#11 3.0 section 2.3.3); some older
    tokens return the bare point, taken as is."""
    if len(value) == length + 2 and value[0] == 0x04 and value[1] == length:
        return value[2:]
    if len(value) == length:
        return value
    raise BackendError(f"unexpected CKA_EC_POINT of {len(value)} bytes")
