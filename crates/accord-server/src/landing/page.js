// The landing page's script: a try-it form per skill, generated from its input schema (invoke,
// stream, or start a task), the task panel (watch, cancel, list), and the signed card view.
// Progressive enhancement: the page reads without it. No framework, no other origin, no inline
// code (the page's content security policy forbids it), and never `innerHTML`: every value is
// written as text. The task token lives in this script's memory only — never in storage or a URL.
'use strict';

(() => {
  const body = document.body;
  const base = body.dataset.base || '';
  const lucidOn = body.dataset.lucid === 'on';
  const tasksOn = body.dataset.tasks === 'on';

  let skills = [];
  try {
    skills = JSON.parse(document.getElementById('skills-data').textContent);
  } catch (error) {
    skills = [];
  }

  // ---- small helpers --------------------------------------------------------------------------

  /** An element with attributes (`text` sets its text, `on*` adds a listener) and children. */
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === 'text') node.textContent = value;
      else if (name === 'className') node.className = value;
      else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
      else if (value === true) node.setAttribute(name, '');
      else node.setAttribute(name, String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function pretty(value) {
    return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  }

  /** A response's body: JSON when it parses, else the text. */
  async function readBody(response) {
    const text = await response.text();
    try {
      return JSON.parse(text);
    } catch (error) {
      return text;
    }
  }

  /** A Lucid error body (`{"error": {"code", "message", "issues"}}`) as readable lines. */
  function describeError(status, statusText, payload) {
    const lines = [`HTTP ${status}${statusText ? ' ' + statusText : ''}`];
    const error = payload && typeof payload === 'object' ? payload.error : null;
    if (error && typeof error === 'object') {
      lines[0] += ` · ${error.code || 'error'}`;
      if (error.message) lines.push(error.message);
      for (const issue of Array.isArray(error.issues) ? error.issues : []) {
        const path = Array.isArray(issue.path) && issue.path.length ? issue.path.join('.') : '(input)';
        lines.push(`${path}: ${issue.message || issue.code || 'invalid'}`);
      }
    } else if (typeof payload === 'string' && payload.trim()) {
      lines.push(payload.trim());
    }
    return lines;
  }

  function showError(target, lines) {
    target.replaceChildren(
      el('p', { className: 'status', text: lines[0] }),
      ...lines.slice(1).map((line) => el('p', { className: 'error-text', text: line })),
    );
    target.className = 'result error';
  }

  /** Reads a server-sent event stream, calling `onEvent({event, data, id})` for each event. */
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    const flush = () => {
      let index;
      while ((index = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, index);
        buffer = buffer.slice(index + 2);
        const event = { event: 'message', data: [], id: null };
        for (const line of block.split('\n')) {
          if (!line || line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? '' : line.slice(colon + 1);
          if (value.startsWith(' ')) value = value.slice(1);
          if (field === 'event') event.event = value;
          else if (field === 'data') event.data.push(value);
          else if (field === 'id') event.id = value;
        }
        if (!event.data.length) continue;
        const text = event.data.join('\n');
        let data = text;
        try {
          data = JSON.parse(text);
        } catch (error) {
          data = text;
        }
        onEvent({ event: event.event, data, id: event.id });
      }
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      // Line ends may be CRLF or CR; a CR at the end of a chunk waits for what follows it.
      const tail = buffer.endsWith('\r') ? '\r' : '';
      buffer = buffer.slice(0, buffer.length - tail.length).replace(/\r\n?/g, '\n') + tail;
      flush();
    }
    buffer = buffer.replace(/\r\n?/g, '\n') + '\n\n';
    flush();
  }

  // ---- try-it forms -----------------------------------------------------------------------------

  /** The non-null type a schema declares, if it declares exactly one. */
  function typeOf(schema) {
    const declared = Array.isArray(schema.type) ? schema.type.filter((type) => type !== 'null') : [schema.type];
    return declared.length === 1 ? declared[0] : undefined;
  }

  /** One form field for a property; returns the row and a reader giving the value or `undefined`. */
  function field(key, name, schema, required) {
    const id = `try-${key}-${name}`;
    const type = typeOf(schema);
    const label = el('label', { for: id, text: required ? `${name} *` : name });
    const hint = schema.description ? el('span', { className: 'hint', text: schema.description }) : null;
    const preset = schema.default !== undefined ? schema.default : undefined;
    let control;
    let read;
    if (Array.isArray(schema.enum)) {
      control = el('select', { id, name });
      if (!required) control.append(el('option', { value: '', text: '(none)' }));
      schema.enum.forEach((choice, index) => {
        control.append(el('option', { value: String(index), text: JSON.stringify(choice) }));
      });
      read = () => (control.value === '' ? undefined : schema.enum[Number(control.value)]);
    } else if (type === 'boolean') {
      control = el('select', { id, name });
      if (!required) control.append(el('option', { value: '', text: '(none)' }));
      control.append(el('option', { value: 'true', text: 'true' }), el('option', { value: 'false', text: 'false' }));
      if (preset !== undefined) control.value = String(preset);
      read = () => (control.value === '' ? undefined : control.value === 'true');
    } else if (type === 'integer' || type === 'number') {
      control = el('input', {
        id, name, type: 'number', step: type === 'integer' ? '1' : 'any',
        min: schema.minimum, max: schema.maximum, value: preset,
      });
      read = () => {
        if (control.value.trim() === '') return undefined;
        const number = Number(control.value);
        if (!Number.isFinite(number) || (type === 'integer' && !Number.isInteger(number))) {
          throw new Error(`${name} must be ${type === 'integer' ? 'an integer' : 'a number'}`);
        }
        return number;
      };
    } else if (type === 'string') {
      control = el('input', { id, name, type: 'text', value: preset, maxlength: schema.maxLength });
      read = () => (control.value === '' && !required ? undefined : control.value);
    } else {
      // Arrays, objects and anything else: JSON, checked before sending.
      control = el('textarea', { id, name, placeholder: 'JSON', className: 'mono' });
      if (preset !== undefined) control.value = JSON.stringify(preset);
      read = () => {
        if (control.value.trim() === '') return undefined;
        try {
          return JSON.parse(control.value);
        } catch (error) {
          throw new Error(`${name} is not valid JSON`);
        }
      };
    }
    return { row: el('div', { className: 'field' }, label, control, hint), read, name, required };
  }

  /** The fields of a skill's input schema, or one JSON text area when it has no properties. */
  function fieldsFor(skill) {
    const schema = skill.inputSchema && typeof skill.inputSchema === 'object' ? skill.inputSchema : {};
    const properties = schema.properties && typeof schema.properties === 'object' ? schema.properties : null;
    if (!properties || typeOf(schema) !== 'object') {
      const id = `try-${skill.key}-input`;
      const area = el('textarea', { id, name: 'input', className: 'mono' });
      area.value = '{}';
      const read = () => {
        try {
          return JSON.parse(area.value || '{}');
        } catch (error) {
          throw new Error('the input is not valid JSON');
        }
      };
      return [{ row: el('div', { className: 'field' }, el('label', { for: id, text: 'input (JSON)' }), area), read, whole: true }];
    }
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    return Object.entries(properties).map(([name, property]) =>
      field(skill.key, name, property && typeof property === 'object' ? property : {}, required.has(name)));
  }

  function collect(fields) {
    if (fields.length === 1 && fields[0].whole) return fields[0].read();
    const input = {};
    for (const one of fields) {
      const value = one.read();
      if (value !== undefined) input[one.name] = value;
    }
    return input;
  }

  async function invoke(skill, input, result) {
    result.className = 'result';
    result.replaceChildren(el('p', { className: 'status', text: 'invoking…' }));
    const response = await fetch(`${base}/entrypoints/${encodeURIComponent(skill.key)}/invoke`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ input }),
    });
    const payload = await readBody(response);
    if (!response.ok) return showError(result, describeError(response.status, response.statusText, payload));
    result.className = 'result ok';
    const output = payload && typeof payload === 'object' && 'output' in payload ? payload.output : payload;
    result.replaceChildren(
      el('p', { className: 'status', text: `HTTP ${response.status} · ${payload.status || 'done'}` }),
      el('pre', {}, el('code', { className: 'output', text: pretty(output) })),
    );
  }

  async function stream(skill, input, result) {
    result.className = 'result';
    const status = el('p', { className: 'status', text: 'streaming…' });
    const events = el('ol', { className: 'events' });
    result.replaceChildren(status, events);
    const response = await fetch(`${base}/entrypoints/${encodeURIComponent(skill.key)}/stream`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ input }),
    });
    if (!response.ok) {
      return showError(result, describeError(response.status, response.statusText, await readBody(response)));
    }
    let ended = null;
    await readEvents(response, ({ event, data }) => {
      const shown = data && typeof data === 'object' ? { ...data } : data;
      if (shown && typeof shown === 'object') {
        for (const noise of ['kind', 'runId', 'sequence', 'createdAt']) delete shown[noise];
      }
      const rest = shown && typeof shown === 'object' && !Object.keys(shown).length ? '' : ` ${JSON.stringify(shown)}`;
      events.append(el('li', { 'data-event': event, text: `${event}${rest}` }));
      if (event === 'run-end') ended = data;
    });
    const outcome = ended && ended.status ? ended.status : 'closed';
    status.textContent = `stream ended · ${outcome}`;
    result.className = outcome === 'failed' ? 'result error' : 'result ok';
  }

  function tryForm(skill, holder) {
    const fields = fieldsFor(skill);
    const result = el('div', { className: 'result', 'aria-live': 'polite' });
    const form = el('form', { className: 'try-form', 'data-skill': skill.key, novalidate: true });
    form.append(el('h4', { text: 'Try it' }));
    if (skill.priced) {
      form.append(el('p', { className: 'notice', text: 'This skill is priced: calls from this page carry no payment, so the agent answers 402.' }));
    }
    for (const one of fields) form.append(one.row);
    const actions = el('div', { className: 'actions' });
    const run = (action) => async (event) => {
      event.preventDefault();
      let input;
      try {
        input = collect(fields);
      } catch (error) {
        return showError(result, ['Not sent', error.message]);
      }
      for (const button of actions.querySelectorAll('button')) button.disabled = true;
      try {
        await action(skill, input, result);
      } catch (error) {
        showError(result, ['The request failed', error.message]);
      } finally {
        for (const button of actions.querySelectorAll('button')) button.disabled = false;
      }
    };
    if (skill.invoke) actions.append(el('button', { type: 'submit', 'data-action': 'invoke', text: 'Invoke', onclick: run(invoke) }));
    if (skill.stream) actions.append(el('button', { type: 'button', 'data-action': 'stream', text: 'Stream', onclick: run(stream) }));
    if (skill.task) {
      actions.append(el('button', {
        type: 'button', className: 'secondary', 'data-action': 'task', text: 'Start task', onclick: run(startTask),
      }));
    }
    form.addEventListener('submit', (event) => event.preventDefault());
    form.append(actions, result);
    holder.replaceChildren(form);
  }

  // ---- the task panel ---------------------------------------------------------------------------

  /** The token the page's tasks are created with: 256 random bits, made on first use. */
  let taskToken = null;
  function currentToken() {
    if (!taskToken) {
      const bytes = new Uint8Array(32);
      crypto.getRandomValues(bytes);
      taskToken = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
    }
    return taskToken;
  }

  const panel = document.getElementById('task-panel');
  const taskList = el('div', { id: 'task-cards' });
  const panelMessage = el('div', { className: 'result', id: 'task-message', 'aria-live': 'polite' });
  const listHolder = el('div', { id: 'task-list' });

  function badge(status) {
    return el('span', { className: `badge ${status || ''}`, text: status || 'unknown' });
  }

  function taskCard(taskId, skillKey, token, status) {
    const state = el('span', { className: 'task-status' }, badge(status));
    const events = el('ol', { className: 'events' });
    const message = el('div', { className: 'result' });
    let watching = null;
    const setStatus = (next) => state.replaceChildren(badge(next));
    const watch = el('button', { type: 'button', className: 'secondary', 'data-action': 'watch', text: 'Watch' });
    const cancel = el('button', { type: 'button', 'data-action': 'cancel', text: 'Cancel' });
    const card = el('div', { className: 'task-card', 'data-task-id': taskId },
      el('p', {}, el('strong', { text: skillKey }), ' ', el('code', { text: taskId }), ' ', state),
      el('div', { className: 'actions' }, watch, cancel), events, message);

    async function follow() {
      if (watching) {
        watching.abort();
        return;
      }
      watching = new AbortController();
      watch.textContent = 'Stop watching';
      events.replaceChildren();
      try {
        const response = await fetch(`${base}/tasks/${encodeURIComponent(taskId)}/subscribe`, {
          headers: { 'Task-Access-Token': token, Accept: 'text/event-stream' },
          signal: watching.signal,
        });
        if (!response.ok) {
          showError(message, describeError(response.status, response.statusText, await readBody(response)));
        } else {
          await readEvents(response, ({ event, data }) => {
            const update = data && typeof data === 'object' ? data : {};
            if (update.status) setStatus(update.status);
            let detail = '';
            if (update.result) detail = ` ${JSON.stringify(update.result.output !== undefined ? update.result.output : update.result)}`;
            if (update.error) detail = ` ${update.error.code || ''}${update.error.message ? ': ' + update.error.message : ''}`;
            events.append(el('li', { 'data-event': event, text: `${event} ${update.status || ''}${detail}` }));
          });
        }
      } catch (error) {
        if (error.name !== 'AbortError') showError(message, ['The subscription failed', error.message]);
      } finally {
        watching = null;
        watch.textContent = 'Watch';
      }
    }

    watch.addEventListener('click', follow);
    cancel.addEventListener('click', async () => {
      cancel.disabled = true;
      try {
        const response = await fetch(`${base}/tasks/${encodeURIComponent(taskId)}/cancel`, {
          method: 'POST',
          headers: { 'Task-Access-Token': token, Accept: 'application/json' },
        });
        const payload = await readBody(response);
        if (!response.ok) {
          showError(message, describeError(response.status, response.statusText, payload));
        } else {
          setStatus(payload.status);
          message.className = 'result ok';
          message.replaceChildren(el('p', { className: 'status', text: `cancel answered: ${payload.status}` }));
        }
      } catch (error) {
        showError(message, ['The request failed', error.message]);
      } finally {
        cancel.disabled = false;
      }
    });
    return { card, follow };
  }

  async function startTask(skill, input, result) {
    const token = currentToken();
    result.className = 'result';
    result.replaceChildren(el('p', { className: 'status', text: 'starting a task…' }));
    const response = await fetch(`${base}/tasks`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json', 'Task-Access-Token': token },
      body: JSON.stringify({ skillId: skill.key, message: { role: 'user', content: { text: JSON.stringify(input) } } }),
    });
    const payload = await readBody(response);
    if (!response.ok) return showError(result, describeError(response.status, response.statusText, payload));
    result.className = 'result ok';
    result.replaceChildren(
      el('p', { className: 'status', text: `task started · ${payload.status}` }),
      el('p', {}, el('a', { href: '#tasks', text: `task ${payload.taskId}: in the task panel below` })),
    );
    const { card, follow } = taskCard(payload.taskId, skill.key, token, payload.status);
    taskList.prepend(card);
    follow();
  }

  async function listTasks() {
    panelMessage.className = 'result';
    panelMessage.replaceChildren();
    if (!taskToken) {
      listHolder.replaceChildren(el('p', { text: 'No tasks yet: this page has no token until it starts a task (or you set one).' }));
      return;
    }
    try {
      const response = await fetch(`${base}/tasks?limit=50`, {
        headers: { 'Task-Access-Token': taskToken, Accept: 'application/json' },
      });
      const payload = await readBody(response);
      if (!response.ok) return showError(panelMessage, describeError(response.status, response.statusText, payload));
      const rows = (payload.tasks || []).map((task) => el('tr', { 'data-task-id': task.taskId },
        el('td', {}, el('code', { text: task.taskId })), el('td', {}, badge(task.status)),
        el('td', { text: task.createdAt || '' }), el('td', { text: task.updatedAt || '' })));
      listHolder.replaceChildren(
        el('p', { className: 'list-summary', text: `${payload.total ?? rows.length} task(s) owned by this page's token` }),
        el('table', {}, el('thead', {}, el('tr', {}, el('th', { text: 'task' }), el('th', { text: 'status' }),
          el('th', { text: 'created' }), el('th', { text: 'updated' }))), el('tbody', {}, ...rows)),
      );
    } catch (error) {
      showError(panelMessage, ['The request failed', error.message]);
    }
  }

  function tokenControls() {
    const own = el('input', { type: 'password', id: 'own-token', autocomplete: 'off', placeholder: 'a token of 20 to 256 characters' });
    const reveal = el('code', { id: 'token-shown', className: 'hidden' });
    const show = el('button', { type: 'button', className: 'secondary', text: 'Show token', onclick: () => {
      reveal.textContent = taskToken || '(none yet)';
      reveal.classList.toggle('hidden');
    } });
    const use = el('button', { type: 'button', className: 'secondary', text: 'Use this token', onclick: () => {
      const value = own.value.trim();
      if (value.length < 20 || value.length > 256) {
        return showError(panelMessage, ['Not used', 'A task token has 20 to 256 characters']);
      }
      taskToken = value;
      own.value = '';
      panelMessage.className = 'result ok';
      panelMessage.replaceChildren(el('p', { className: 'status', text: 'The page now lists and creates tasks with your token.' }));
    } });
    return el('details', { className: 'token' }, el('summary', { text: 'Task token (kept in this page only)' }),
      el('p', { text: 'Tasks started here are owned by a random token this page made; use the same token with `accord task … --token` to reach them from elsewhere, or set a token of your own.' }),
      el('div', { className: 'actions' }, show, reveal), el('div', { className: 'field' }, el('label', { for: 'own-token', text: 'your token' }), own),
      el('div', { className: 'actions' }, use));
  }

  // ---- the signed card view ---------------------------------------------------------------------

  const signed = document.getElementById('card-signed');
  if (signed) {
    signed.addEventListener('toggle', async () => {
      if (!signed.open || signed.dataset.loaded) return;
      const code = signed.querySelector('code');
      try {
        const response = await fetch(signed.dataset.src, { headers: { Accept: 'application/json' } });
        const payload = await readBody(response);
        if (!response.ok) throw new Error(describeError(response.status, response.statusText, payload).join(' · '));
        code.textContent = pretty(payload);
        signed.dataset.loaded = 'yes';
      } catch (error) {
        code.textContent = `The signed card could not be read: ${error.message}`;
      }
    });
  }

  // ---- wiring -----------------------------------------------------------------------------------

  if (lucidOn) {
    for (const holder of document.querySelectorAll('[data-try]')) {
      const skill = skills.find((one) => one.key === holder.dataset.try);
      if (skill) tryForm(skill, holder);
    }
  }
  if (panel && tasksOn) {
    panel.replaceChildren(
      tokenControls(),
      el('div', { className: 'actions' }, el('button', { type: 'button', id: 'list-tasks', text: 'List my tasks', onclick: listTasks })),
      panelMessage, listHolder, taskList,
    );
  }
  body.dataset.ready = 'yes';
})();
